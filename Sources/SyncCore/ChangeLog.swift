import Foundation
import SyncProtocol

/// The front a change came in through: the line protocol (a script, the CLI), the HTTP API (the
/// console), or an agent (a line connection that said `HELLO 1 plistsync-agent`).
public enum ChangeFront: String, Sendable, CaseIterable {
    case line, http, agent

    /// The front a line connection is, by the client name its HELLO gave.
    public static func line(clientName: String?) -> ChangeFront {
        clientName == agentClientName ? .agent : .line
    }

    public static let agentClientName = "plistsync-agent"
}

/// Who makes a change, as a session knows it: the account, the token it logged in with (nil
/// for a password login) and the front. The store keeps the token's id and label, never the
/// token's hash.
public struct ChangeAuthor: Sendable, Hashable {
    public var user: String
    public var tokenHash: String?
    public var via: ChangeFront

    public init(user: String, tokenHash: String?, via: ChangeFront) {
        (self.user, self.tokenHash, self.via) = (user, tokenHash, via)
    }

    /// The device's public name: the token's id, or `password` for a password login.
    public var device: String { tokenHash.map { String($0.prefix(TokenInfo.idLength)) } ?? Self.passwordDevice }

    public static let passwordDevice = "password"
    /// Writes made by the server's own tools (tests, imports through the store).
    public static let server = ChangeAuthor(user: "-", tokenHash: nil, via: .line)
}

/// Who made a logged change, as the log keeps it: user, device (a token id or `password`), the
/// token's label when it had one, and the front. `unknown` for states from before the log.
public struct LoggedAuthor: Sendable, Hashable {
    public var user: String
    public var device: String
    public var deviceLabel: String?
    public var via: String

    public init(user: String, device: String, deviceLabel: String?, via: String) {
        (self.user, self.device, self.deviceLabel, self.via) = (user, device, deviceLabel, via)
    }

    public init(_ author: ChangeAuthor, label: String?) {
        self.init(user: author.user, device: author.device, deviceLabel: label, via: author.via.rawValue)
    }

    public static let unknown = LoggedAuthor(user: "-", device: "-", deviceLabel: nil, via: "-")

    /// `<user> <device> <label|-> <via>`, as LOG and VERSION lines give it.
    public var wireWords: String {
        "\(ResponseLine.argument(user)) \(device) \(ResponseLine.argument(deviceLabel ?? "-")) \(via)"
    }

    /// Whether `filter` picks this author out.
    public func matches(_ filter: LogQuery.Author?) -> Bool {
        switch filter {
        case nil: true
        case .user(let name): user == name
        case .device(let id): device == id
        }
    }
}

/// One entry of a collection's change log: the state a change wrote, its seq, who made it and
/// when (seconds since 1970).
public struct LoggedChange: Equatable, Sendable {
    public var collection: String
    public var seq: Int64
    public var state: RecordState
    public var author: LoggedAuthor
    public var at: Int64

    public init(collection: String, seq: Int64, state: RecordState, author: LoggedAuthor, at: Int64) {
        (self.collection, self.seq, self.state, self.author, self.at) = (collection, seq, state, author, at)
    }
}

/// What the log answers about how far back it reaches.
public enum LogReach {
    /// Whether a listing at `seq` can be rebuilt from a log complete after `completeFrom` with
    /// the store at `current`.
    public static func covers(_ seq: Int64, completeFrom: Int64, current: Int64) -> Bool {
        seq >= completeFrom && seq <= current
    }
}
