import Foundation
import SQLiteKit
import Synchronization
import SyncCore
import SyncProtocol

/// A LIST read from SQLite a page at a time: a cursor on a connection of its own, holding one
/// read snapshot (WAL: writers go on) until the last page or until it is let go.
///
/// A snapshot held open keeps SQLite from recycling its write-ahead log, which then grows
/// with every write until the snapshot ends. So a listing holds one at most
/// `maxSnapshotSeconds`: a client still reading after that gets the rest read whole at once
/// (as every listing was before), and at most `maxOpen` snapshots are open at a time (more
/// listings at once are read whole).
public final class SQLiteListing: RecordListing, @unchecked Sendable {
    public static let maxSnapshotSeconds: TimeInterval = 30
    public static let maxOpen = 32
    private static let open = Atomic<Int>(0)

    public let seq: Int64
    private var cursor: SQLiteCursor?
    /// The collection's edits whose rows are written behind, as of the listing's start.
    private let waiting: WaitingEdits
    private var view: PendingRecords.ReadView?
    private var rest: ArraySlice<RecordState> = []
    private let opened = Date()

    /// Takes one of the `maxOpen` snapshots; false when all are taken.
    static func reserve() -> Bool {
        if open.add(1, ordering: .relaxed).newValue <= maxOpen { return true }
        open.subtract(1, ordering: .relaxed)
        return false
    }

    /// A reservation whose listing could not be opened.
    static func unreserve() {
        open.subtract(1, ordering: .relaxed)
    }

    /// `cursor` was opened after a successful `reserve()`, and after `view` began.
    init(cursor: SQLiteCursor, seq: Int64, waiting: WaitingEdits, view: PendingRecords.ReadView) {
        self.cursor = cursor
        self.seq = seq
        self.waiting = waiting
        self.view = view
    }

    public func next(_ limit: Int) throws(StoreFailure) -> [RecordState] {
        do {
            if let cursor, Date().timeIntervalSince(opened) > Self.maxSnapshotSeconds {
                rest = try cursor.next(Int.max, row: waiting.state)[...]
                release()
            }
            guard let cursor else {
                let page = rest.prefix(limit)
                rest = rest.dropFirst(limit)
                return Array(page)
            }
            let page = try cursor.next(limit, row: waiting.state)
            if page.count < limit { release() }
            return page
        } catch {
            release()
            throw StoreFailure(.failed, error.description)
        }
    }

    public func nextLines(_ limit: Int, collection: String) throws(StoreFailure) -> EncodedLines {
        guard let cursor, Date().timeIntervalSince(opened) <= Self.maxSnapshotSeconds else {
            return EncodedLines(records: try next(limit), collection: collection)
        }
        do {
            let prefix = EncodedLines.prefix("RECORD", collection)
            var bytes: [UInt8] = []
            bytes.reserveCapacity(limit * 128)
            let count = try cursor.next(limit) { row in
                if let (id, edit) = waiting.edit(over: row) {
                    bytes.append(contentsOf: ServerNotice.record(collection: collection, state: edit.state(id: id)).line.utf8)
                    return
                }
                bytes.append(contentsOf: prefix)
                RowLines.appendState(row, id: 0, rev: 1, position: 2, fields: 3, to: &bytes)
            }
            if count < limit { release() }
            return EncodedLines(bytes: bytes, count: count)
        } catch {
            release()
            throw StoreFailure(.failed, error.description)
        }
    }

    private func release() {
        view?.end()
        view = nil
        guard cursor != nil else { return }
        cursor = nil
        Self.open.subtract(1, ordering: .relaxed)
    }

    deinit { release() }
}
