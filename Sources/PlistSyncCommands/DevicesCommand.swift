import AgentKit
import Foundation
import SyncCore
import SyncProtocol

/// `plistsync devices` and `plistsync revoke DEVICE`: each login token is a device; see them
/// all (when each last logged in) and revoke another one's.
enum DevicesCommand: VerbSubcommand {
    static let help = """
        OVERVIEW: List the devices (login tokens) of your account, or revoke one.

        USAGE: plistsync devices [client options]
               plistsync revoke DEVICE [client options]

        devices: one line a token: its id, label, when it was made and last used; (this) marks
        the token this command logged in with.
        revoke: DEVICE is an id from `devices` or a label that names one token. Every connection
        that logged in with it is closed at once, and an agent using it stops and says so in its
        status until `plistsync login` gives it a new token.

        OPTIONS:
        \(ClientOptions.usage)
        """

    /// One token as TOKEN LIST shows it.
    struct Device: Equatable {
        var id: String
        var created: String
        var lastUsed: String
        var isThis: Bool
        var label: String
    }

    static func run(_ verb: String, _ arguments: [String]) throws {
        let options = try Arguments(arguments, valueOptions: ClientOptions.valueOptions, flagOptions: ClientOptions.flagOptions)
        let client = try ClientOptions(options).client
        switch verb {
        case "devices":
            guard options.positionals.isEmpty else { throw UsageError("devices takes no argument") }
            let devices = try list(client)
            guard !devices.isEmpty else { return Console.out("no devices: log in with `plistsync login` to make one") }
            ScriptCommand.printTable(["ID", "LABEL", "CREATED", "LAST USED"], devices.map { device in
                [device.id, device.label, device.created, (device.lastUsed == "-" ? "never" : device.lastUsed) + (device.isThis ? "  (this)" : "")]
            })
        case "revoke":
            guard options.positionals.count == 1 else { throw UsageError("revoke needs one DEVICE (an id or a label from `plistsync devices`)") }
            let wanted = options.positionals[0]
            let devices = try list(client)
            let byID = devices.filter { $0.id == wanted.lowercased() }
            let matching = byID.isEmpty ? devices.filter { $0.label == wanted } : byID
            guard let device = matching.first else { throw RuntimeError("no device \(wanted); `plistsync devices` lists them") }
            guard matching.count == 1 else { throw RuntimeError("\(matching.count) devices are labelled \(wanted); revoke one by its id") }
            var refusal: String?
            try client.run([.tokenRevoke(device.id)], onReply: { line, event in
                if case .ok = event {} else { refusal = line }
                return true
            })
            if let refusal { throw RuntimeError("the server did not revoke it: \(refusal)") }
            Console.out("revoked \(device.id) (\(device.label))\(device.isThis ? "; that was this command's own token" : "")")
        default:
            throw UsageError("unknown command \(verb)")
        }
    }

    /// The account's tokens, from TOKEN LIST.
    static func list(_ client: ScriptClient) throws -> [Device] {
        var devices: [Device] = []
        var refusal: String?
        try client.run([.tokenList], onUntagged: { line in
            guard let parsed = ServerLine.parseAnsweringTag(Array(line.utf8)), case .token(let token) = ServerEvent(parsed) else { return }
            devices.append(Device(id: token.id, created: token.created, lastUsed: token.lastUsed ?? "-", isThis: token.isThisConnection, label: token.label ?? "-"))
        }, onReply: { line, event in
            if case .ok = event {} else { refusal = line }
            return true
        })
        if let refusal { throw RuntimeError("the server did not list the devices: \(refusal)") }
        return devices
    }
}
