import EventLoop
import Foundation

/// Fills a collection with `count` small records over one pipelined connection (for measuring
/// an agent's initial sync).
public enum Populate {
    public static func run(against target: BenchTarget, collection: String, count: Int) throws {
        let loop = EventLoop()
        var failure: String?
        BenchConnection.open(loop: loop, target: target) { client in
            guard let client else {
                failure = "cannot log in to \(target.address)"
                return
            }
            var answered = 0
            client.onLine = { line in
                if line.hasPrefix("c ") {
                    return
                }
                guard line.hasPrefix("p ") else { return }
                if !line.hasPrefix("p OK") { failure = line }
                answered += 1
                if answered == count { client.connection.close() }
            }
            client.send("c CREATE \(collection)")
            for index in 0..<count {
                client.send("p PUT \(collection) r\(index) 0 {\"name\":\"Record \(index)\",\"serial\":\"SN-\(index)\",\"value\":\(index)}")
            }
        }
        loop.run()
        loop.close()
        if let failure { throw BenchFailure(failure) }
    }
}
