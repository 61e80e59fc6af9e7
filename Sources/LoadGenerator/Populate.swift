import EventLoop
import SyncClient
import SyncCore
import SyncProtocol
import Foundation

/// Fills a collection with `count` small records over one pipelined connection (for measuring
/// an agent's initial sync).
public enum Populate {
    /// `edits` more rounds then write every record again (rev 2, 3, …): a collection with history.
    public static func run(against target: BenchTarget, collection: String, count: Int, edits: Int = 0) throws {
        let loop = EventLoop()
        var failure: String?
        target.open(on: loop) { client in
            guard let client else {
                failure = "cannot log in to \(target.address)"
                return
            }
            var answered = 0
            client.onReply = { line in
                if !line.bytes.starts(with: "p OK".utf8) { failure = line.text }
                answered += 1
                if answered == count * (edits + 1) { client.close() }
            }
            client.send(.create(collection: collection)) { _ in }
            for round in 0...edits {
                for index in 0..<count {
                    let fields = ValueJSON.encode(.dictionary(["name": .string("Record \(index)"), "serial": .string("SN-\(index)"), "value": .integer(Int64(index + round))]))
                    client.send(.put(collection: collection, id: "r\(index)", baseRev: Int64(round), fieldsJSON: fields), tag: "p")
                }
            }
        }
        loop.run()
        loop.close()
        if let failure { throw BenchFailure(failure) }
    }
}
