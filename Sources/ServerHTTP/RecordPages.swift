import ServerKit
import HTTPKit
import SyncCore
import SyncProtocol

/// One paged listing in progress (`GET …/records?limit=…&after=…`, and with `at=` of the list as it
/// stood at a seq: LIST … AT … pages): LIST pages of at most
/// `CommandParser.maxPageRecords`, each read after the last record of the one before, written
/// out as they come, until `limit` records are sent or the collection ends. `offset` records
/// are passed over first (page by page: slower than `after`, never the whole collection at
/// once).
final class RecordPages {
    private let exchange: Exchange
    private let collection: String
    /// The seq of the list paged (`?at=`), nil for today's.
    private let at: Int64?
    private var cursor: RecordCursor?
    private var skip: Int
    private var remaining: Int
    private var started = false
    private var first = true

    init(exchange: Exchange, collection: String, at: Int64?, after: RecordCursor?, skip: Int, limit: Int) {
        self.exchange = exchange
        self.collection = collection
        self.at = at
        cursor = after
        self.skip = skip
        remaining = limit
    }

    /// Reads the next page; the object lives on in the request's answer until the last.
    func next() {
        let wanted = max(1, min(CommandParser.maxPageRecords, remaining > Int.max - skip ? Int.max : remaining + skip))
        var records: [RecordState] = []
        let command: Command = if let at {
            .listPageAt(collection: collection, seq: at, after: cursor, limit: wanted)
        } else {
            .listPage(collection: collection, after: cursor, limit: wanted)
        }
        exchange.bridge.request(command,
                                collecting: { if case .record = $0 { true } else { false } },
                                onNotice: { if case .record(_, let state) = $0 { records.append(state) } }) { [self] answer in
            guard case .ok(.listed(_, let count, let seq), _) = answer else {
                // Cut short after the head: the client sees an unfinished body.
                if started { return exchange.connection.streamEnded(keepAlive: false) }
                return exchange.respond(APIResponse.response(for: answer))
            }
            var text = ""
            for record in records where remaining > 0 {
                cursor = RecordCursor(record)
                if skip > 0 {
                    skip -= 1
                    continue
                }
                text += (first ? "" : ",") + APIResponse.recordJSON(record)
                first = false
                remaining -= 1
            }
            let ended = count < wanted
            // A page of the list at a seq rebuilds the whole list: one a request, so no request
            // costs more than one LIST AT (the pager follows `next`).
            let onePageOnly = at != nil && remaining > 0 && !ended
            if remaining > 0, !ended, !onePageOnly {
                write(text)
                return next()
            }
            let next = onePageOnly || (remaining == 0 && !(ended && records.last.flatMap(RecordCursor.init) == cursor)) ? cursor : nil
            let tail = "],\"seq\":\(seq),\"next\":" + (next.map { ValueJSON.quoted("\($0.position).\($0.id)") } ?? "null") + "}\n"
            write(text + tail)
            exchange.connection.writeBody(HTTPResponse.lastChunk)
            exchange.connection.streamEnded(keepAlive: exchange.request.keepAlive)
        }
    }

    private func write(_ text: String) {
        if !started {
            started = true
            exchange.connection.writeHead(HTTPResponse(status: 200, headers: APIResponse.jsonHeaders))
            exchange.connection.writeBody(HTTPResponse.chunk("{\"records\":[" + text))
        } else if !text.isEmpty {
            exchange.connection.writeBody(HTTPResponse.chunk(text))
        }
    }
}
