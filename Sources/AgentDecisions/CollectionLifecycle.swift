/// How a collection comes to be mirrored here, and stops (DESIGN.md §5): folders and attached
/// files against what the server lists, drops and renames. Pure: the agent looks at its folders
/// and state, this decides, the agent carries it out.
public enum CollectionLifecycle {
    /// A folder (or attached file) here that the server does not list, once its list is known.
    public enum Unlisted: Equatable, Sendable {
        /// New here: made on the server.
        case create
        /// Synced here before and gone from the server now: dropped (or renamed, or the access
        /// removed) while this agent was away. Making it again would undo the drop.
        case droppedWhileAway
    }

    /// `wasMirrored`: this mirror's state knows a seq or records of it; `rebasing`: the store
    /// was restored from a backup, and what this mirror synced since goes back up.
    public static func unlisted(wasMirrored: Bool, rebasing: Bool) -> Unlisted {
        wasMirrored && !rebasing ? .droppedWhileAway : .create
    }

    /// A collection the server lists, about to be mirrored.
    public enum Start: Equatable, Sendable {
        /// Its folder is here (or made now, for one new here): subscribed.
        case mirror
        /// Synced here before and its folder is gone (deleted, moved away): not mirrored here
        /// any more, and nothing is deleted anywhere.
        case detach
    }

    public static func start(wasMirrored: Bool, folderExists: Bool) -> Start {
        wasMirrored && !folderExists ? .detach : .mirror
    }

    /// The server renamed a collection this mirror has.
    public enum Rename: Equatable, Sendable {
        /// The folder (if any) and everything known follow the new name.
        case follow
        /// An app file is attached to the old name: it stays attached to it, and is synced as a
        /// new collection of that name; the renamed one is downloaded afresh.
        case keepAttachedFile
        /// A folder of the new name is here already: the old folder stays and is synced as a new
        /// collection of the old name; the renamed one is downloaded afresh.
        case keepFolder
    }

    /// A rename's first step: decided at once, or decided by whether the folder moves.
    public enum RenameStep: Equatable, Sendable {
        case decided(Rename)
        /// Rename the folder, then ask `rename(folderMoved:)`.
        case moveFolder
    }

    /// An attached collection's folder is not touched; one with no folder has nothing to move.
    public static func rename(attached: Bool, hasFolder: Bool) -> RenameStep {
        if attached { return .decided(.keepAttachedFile) }
        return hasFolder ? .moveFolder : .decided(.follow)
    }

    /// `folderMoved`: whether the folder could be renamed (not when one of the new name is here).
    public static func rename(folderMoved: Bool) -> Rename {
        folderMoved ? .follow : .keepFolder
    }
}
