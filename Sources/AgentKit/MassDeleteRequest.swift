import Foundation

/// A person's answer to a held mass delete, left by `plistsync deletes` for the running agent
/// as `DIR/.plistsync/deletes/<collection>.confirm` or `.undo`.
public enum MassDeleteRequest: String {
    /// Delete the held records on the server.
    case confirm
    /// Write the deleted files again from the last synced state.
    case undo

    static func folder(_ stateFolder: String) -> String { stateFolder + "/deletes" }

    /// Leaves the request for the agent of `directory`.
    public static func write(_ request: MassDeleteRequest, directory: String, collection: String) throws {
        let fileSystem = PosixFileSystem()
        let stateFolder = directory + "/.plistsync"
        try fileSystem.makeFolder(folder(stateFolder))
        clear(stateFolder: stateFolder, collection: collection, in: fileSystem)
        try fileSystem.writeFile(path(stateFolder, collection, request), [], durable: true)
    }

    static func read(stateFolder: String, collection: String, in fileSystem: any FileSystem) -> MassDeleteRequest? {
        [.undo, .confirm].first { fileSystem.kind(at: path(stateFolder, collection, $0)) != .missing }
    }

    static func clear(stateFolder: String, collection: String, in fileSystem: any FileSystem) {
        for request in [MassDeleteRequest.confirm, .undo] { fileSystem.removeFile(path(stateFolder, collection, request)) }
    }

    private static func path(_ stateFolder: String, _ collection: String, _ request: MassDeleteRequest) -> String {
        folder(stateFolder) + "/" + collection + "." + request.rawValue
    }
}
