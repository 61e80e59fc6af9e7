/// A user's access to one collection; each role includes the ones below it.
public enum Role: Int, Comparable, Sendable, CaseIterable {
    case read = 1
    case write = 2
    case admin = 3

    /// The wire and CLI spelling.
    public var name: String {
        switch self {
        case .read: "read"
        case .write: "write"
        case .admin: "admin"
        }
    }

    public init?(name: String) {
        guard let role = Role.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = role
    }

    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rawValue < rhs.rawValue }
}
