import EventLoop

/// A session's connection when serving: a TCP socket (TLS on it when the server has a
/// certificate).
final class TCPSessionTransport: SessionTransport {
    private let connection: TCPConnection

    init(_ connection: TCPConnection) {
        self.connection = connection
    }

    var peerHost: String? { connection.peer?.host }
    var pendingOutputBytes: Int { connection.pendingOutputBytes }

    func attach(_ session: Session) {
        connection.onData = { [unowned session] bytes in session.received(bytes) }
        connection.onEnd = { [unowned session] end in
            if case .failed(let reason) = end { session.inputFailed(reason) } else { session.endOfInput() }
        }
        connection.onDrain = { [unowned session] in session.outputDrained() }
        connection.onClose = { [unowned session] in session.closed() }
        connection.startReading()
    }

    func perform(_ action: SessionAction) {
        switch action {
        case .send(let output): connection.write(output.text)
        case .deliver(let delivery): connection.write(delivery.run.shared, range: delivery.byteRange)
        case .pauseReading: connection.stopReading()
        case .resumeReading: connection.startReading()
        case .close(.socketError), .closeNow: connection.close()
        case .close: connection.closeAfterWriting()
        case .commit, .read, .checkPassword, .checkToken, .announce, .subscribe, .unsubscribe: break
        }
    }
}
