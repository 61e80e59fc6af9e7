/// Sessions with writes to hand over while the group committer's queue is full, woken in turn
/// when a batch makes room.
final class CommitRoomWaiters {
    private var waiting: [ObjectIdentifier: Session] = [:]

    func wait(_ session: Session) {
        waiting[ObjectIdentifier(session)] = session
    }

    func forget(_ session: Session) {
        waiting[ObjectIdentifier(session)] = nil
    }

    /// Wakes waiting sessions while `hasRoom`; the rest stay waiting for the next batch.
    func wake(while hasRoom: () -> Bool) {
        for (key, session) in waiting {
            guard hasRoom() else { return }
            waiting[key] = nil
            session.commitRoomAvailable()
        }
    }
}
