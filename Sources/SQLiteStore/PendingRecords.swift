import Synchronization
import SyncCore
#if SIMULATION_MUTATIONS
import SyncProtocol
#endif

/// Field edits that are committed (their change is in the log, fsynced) but not yet written to
/// their record's row: the rows lag the log by these, and every read lays them over the rows.
///
/// Only an edit that keeps its record's place waits here (a PUT of fields, a restore to the
/// same position); every other write goes to its row at once, so the rows' positions, and so
/// the order index, are always current. The commit connection adds entries after each commit
/// and writes them to their rows behind, in large batches sorted by key (`RecordWriter`'s
/// apply), which retires them.
///
/// A read sees an entry when it is newer than the row it read (a larger seq) and the read
/// began before the commit that retired it: a read that began after saw that commit's rows.
/// Retired entries are dropped once no read that began before their retirement is open.
final class PendingRecords: Sendable {
    /// A waiting edit: the record's state after it.
    struct Entry: Sendable {
        var rev: Int64
        var seq: Int64
        var position: String
        var fieldsJSON: String
        var at: Int64
        /// The generation of the commit that wrote it to its row or replaced it there.
        var retiredAt: UInt64?

        func state(id: String) -> RecordState {
            RecordState(id: id, rev: rev, body: .live(position: position, fieldsJSON: fieldsJSON))
        }
    }

    /// A record by its collection and id, compared by their bytes (as SQLite compares them:
    /// two ids that differ only in Unicode normalisation are two records).
    struct Key: Hashable, Sendable, Comparable {
        var collection: RecordID
        var id: RecordID

        init(collection: String, id: String) {
            self.collection = RecordID(collection)
            self.id = RecordID(id)
        }

        static func < (lhs: Key, rhs: Key) -> Bool {
            lhs.collection != rhs.collection ? lhs.collection < rhs.collection : lhs.id < rhs.id
        }
    }

    /// What one commit did to the waiting edits.
    enum Staged: Sendable {
        case waiting(Entry)
        case retired
    }

    private struct State {
        var byCollection: [RecordID: [RecordID: Entry]] = [:]
        var waiting = 0
        var generation: UInt64 = 0
        /// Open reads by the generation they began at.
        var reads: [UInt64: Int] = [:]
        /// Retired entries in the order they were retired, to drop.
        var retired: [(key: Key, at: UInt64)] = []
        var retiredDropped = 0
        var publishedSeq: Int64
    }

    private let state: Mutex<State>

    init(seq: Int64) {
        state = Mutex(State(publishedSeq: seq))
    }

    /// Edits waiting for their rows (not counting retired entries kept for open reads).
    var waitingCount: Int { state.withLock { $0.waiting } }

    // MARK: Reads

    /// A read's view of the waiting edits: what it began at. `end()` it when the read is done.
    final class ReadView: @unchecked Sendable {
        fileprivate let owner: PendingRecords
        let generation: UInt64
        /// Every change up to this seq is either waiting here or in the rows the read sees.
        let seq: Int64
        private var ended = false

        fileprivate init(owner: PendingRecords, generation: UInt64, seq: Int64) {
            self.owner = owner
            self.generation = generation
            self.seq = seq
        }

        /// The waiting edit of the record, when this read sees one.
        func entry(_ collection: String, _ id: String) -> Entry? {
            owner.state.withLock { state in
                guard let entry = state.byCollection[RecordID(collection)]?[RecordID(id)], Self.sees(entry, at: generation) else { return nil }
                return entry
            }
        }

        /// Every waiting edit of the collection this read sees, by id.
        func entries(of collection: String) -> [RecordID: Entry] {
            owner.state.withLock { state in
                guard let entries = state.byCollection[RecordID(collection)] else { return [:] }
                return entries.filter { Self.sees($0.value, at: generation) }
            }
        }

        fileprivate static func sees(_ entry: Entry, at generation: UInt64) -> Bool {
            #if SIMULATION_MUTATIONS
            if Mutation.active == .waitingEditsNotLaidOver { return false }
            #endif
            guard let retiredAt = entry.retiredAt else { return true }
            return retiredAt > generation
        }

        func end() {
            guard !ended else { return }
            ended = true
            owner.endRead(at: generation)
        }

        deinit { end() }
    }

    /// Begins a read: call before the read's first query, so its rows are at least as new as
    /// this view's retirements.
    func beginRead() -> ReadView {
        state.withLock { state in
            state.reads[state.generation, default: 0] += 1
            return ReadView(owner: self, generation: state.generation, seq: state.publishedSeq)
        }
    }

    private func endRead(at generation: UInt64) {
        state.withLock { state in
            if let count = state.reads[generation], count > 1 {
                state.reads[generation] = count - 1
            } else {
                state.reads[generation] = nil
            }
            Self.dropRetired(&state)
        }
    }

    // MARK: The commit connection

    /// The record's edit still waiting for its row.
    func waiting(_ key: Key) -> Entry? {
        state.withLock { state in
            guard let entry = state.byCollection[key.collection]?[key.id], entry.retiredAt == nil else { return nil }
            return entry
        }
    }

    /// The records with a waiting edit, in key order (the order their rows are written in).
    func waitingKeys() -> [Key] {
        let keys = state.withLock { state in
            state.byCollection.flatMap { collection, entries in
                entries.compactMap { $0.value.retiredAt == nil ? Key(collection: collection.string, id: $0.key.string) : nil }
            }
        }
        return keys.sorted()
    }

    /// Makes a committed transaction's edits visible: new waiting edits, and retirements
    /// (their rows were written in it). `seq` is the last seq it committed.
    func publish(_ staged: [Key: Staged], seq: Int64) {
        state.withLock { state in
            state.publishedSeq = max(state.publishedSeq, seq)
            guard !staged.isEmpty else { return }
            state.generation += 1
            let generation = state.generation
            for (key, change) in staged {
                let old = state.byCollection[key.collection]?[key.id]
                let wasWaiting = old != nil && old?.retiredAt == nil
                switch change {
                case .waiting(let entry):
                    state.byCollection[key.collection, default: [:]][key.id] = entry
                    if !wasWaiting { state.waiting += 1 }
                case .retired:
                    guard wasWaiting else { continue }
                    state.byCollection[key.collection]?[key.id]?.retiredAt = generation
                    state.retired.append((key, generation))
                    state.waiting -= 1
                }
            }
            Self.dropRetired(&state)
        }
    }

    /// Drops the retired entries no open read can still need.
    private static func dropRetired(_ state: inout State) {
        let oldestRead = state.reads.keys.min() ?? state.generation
        var index = state.retiredDropped
        while index < state.retired.count, state.retired[index].at <= oldestRead {
            let (key, at) = state.retired[index]
            if state.byCollection[key.collection]?[key.id]?.retiredAt == at {
                state.byCollection[key.collection]?[key.id] = nil
                if state.byCollection[key.collection]?.isEmpty == true { state.byCollection[key.collection] = nil }
            }
            index += 1
        }
        state.retiredDropped = index
        if index > 1024, index * 2 > state.retired.count {
            state.retired.removeFirst(index)
            state.retiredDropped = 0
        }
    }
}
