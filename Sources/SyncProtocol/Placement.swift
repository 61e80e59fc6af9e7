/// Where a MOVE puts a record relative to the others.
public enum Placement: Equatable, Sendable {
    case first
    case last
    case before(String)
    case after(String)
}
