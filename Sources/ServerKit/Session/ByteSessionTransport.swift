import EventLoop
import SyncCore

/// A session's connection over a byte stream: a TCP socket (TLS on it when the server has a
/// certificate) when serving, a pair of buffers (`MemoryByteConnection`) in tests, so a
/// session runs the same in memory as over the network.
final class ByteSessionTransport: SessionTransport {
    private let connection: any ByteConnection

    init(_ connection: any ByteConnection) {
        self.connection = connection
    }

    var peerHost: String? { connection.peerHost }
    var pendingOutputBytes: Int { connection.pendingOutputBytes }
    var takesEncodedLines: Bool { true }

    func attach(_ session: Session) {
        connection.onData = { [unowned session] bytes in session.received(bytes) }
        connection.onEnd = { [unowned session] end in
            if case .failed(let reason) = end { session.inputFailed(reason) } else { session.endOfInput() }
        }
        connection.onDrain = { [unowned session] in session.outputDrained() }
        connection.onClose = { [unowned session] in session.closed() }
        connection.startReading()
    }

    private static let slowGoodbye = Array(ServerOutput.notices([.bye(.slow)]).text.utf8)

    func carryOut(_ action: ConnectionAction) {
        switch action {
        case .send(.lines(let lines)): connection.write(lines.bytes)
        case .send(let output): connection.write(output.text)
        case .deliver(let delivery): connection.write(delivery.run.shared, range: delivery.byteRange)
        case .pauseReading: connection.stopReading()
        case .resumeReading: connection.startReading()
        case .close(.socketError), .closeNow: connection.close()
        case .close(.slow):
            // The goodbye goes right after what is already on its way, not behind the megabytes
            // the subscriber did not read: it reaches a client that reads again later, from the
            // kernel's buffer, even once the socket is closed.
            if !connection.closeAfterWriting(replacingUnsentWith: Self.slowGoodbye) { connection.closeAfterWriting() }
        case .close: connection.closeAfterWriting()
        }
    }
}
