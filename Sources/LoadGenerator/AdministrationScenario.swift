import EventLoop
import Foundation
import SyncClient
import SyncCore
import SyncProtocol

/// Administrative requests pipelined on one logged-in connection (`bench accounts`): at most
/// `window` in flight, the next sent as each reply comes. Measures how long the whole list
/// takes and counts the replies that were not OK.
public struct AdministrationScenario {
    public struct Result: Sendable {
        public let requests: Int
        public let seconds: Double
        public let errors: Int
        /// The first refusal's line, to say why.
        public let firstError: String?

        public var perSecond: Double { Double(requests) / max(seconds, 1e-9) }
    }

    let window: Int

    public init(window: Int) {
        self.window = window
    }

    /// Runs `requests` in order against `target` (logged in as its user); nil when it could
    /// not connect or log in.
    public func run(_ requests: [Command], against target: BenchTarget) -> Result? {
        let loop = EventLoop()
        var outcome: Result?
        ClientConnection.connect(on: loop, to: target.address, tls: target.tls) { connected in
            guard case .success(let client) = connected else { return }
            client.logIn(client: "plistsync-bench", with: .auth(user: target.user, password: target.password)) { event in
                guard case .ok = event else { return client.close() }
                let started = DispatchTime.now().uptimeNanoseconds
                var next = 0
                var answered = 0
                var errors = 0
                var firstError: String?
                func sendMore() {
                    while next < requests.count, next - answered < window {
                        client.send(requests[next]) { line in
                            answered += 1
                            if case .ok = line.reply {} else {
                                errors += 1
                                if firstError == nil { firstError = line.text }
                            }
                            if answered == requests.count {
                                let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                                outcome = Result(requests: requests.count, seconds: seconds, errors: errors, firstError: firstError)
                                client.quit()
                            } else {
                                sendMore()
                            }
                        }
                        next += 1
                    }
                }
                if requests.isEmpty {
                    outcome = Result(requests: 0, seconds: 0, errors: 0, firstError: nil)
                    return client.quit()
                }
                sendMore()
            }
        }
        loop.run()
        loop.close()
        return outcome
    }
}
