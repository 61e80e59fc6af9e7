/// `plistsync bench`: load generator (filled in below).
enum BenchCommand: Subcommand {
    static let help = "OVERVIEW: benchmarks"
    static func run(_ arguments: [String]) throws {}
}
