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
        let folder = folder(directory + "/.plistsync")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        clear(stateFolder: directory + "/.plistsync", collection: collection)
        try Data().write(to: URL(fileURLWithPath: folder + "/" + collection + "." + request.rawValue))
    }

    static func read(stateFolder: String, collection: String) -> MassDeleteRequest? {
        [.undo, .confirm].first { FileManager.default.fileExists(atPath: folder(stateFolder) + "/" + collection + "." + $0.rawValue) }
    }

    static func clear(stateFolder: String, collection: String) {
        for request in [MassDeleteRequest.confirm, .undo] { unlink(folder(stateFolder) + "/" + collection + "." + request.rawValue) }
    }
}
