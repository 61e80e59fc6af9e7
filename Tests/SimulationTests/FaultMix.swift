import PlistSyncTesting

/// The faults one seeded run suffers, and how often: each run draws its own mix, so some runs
/// hammer one kind of fault (a server that restarts every few seconds, a disk that is always
/// full) and others mix several, rather than every run getting the same thin spread.
struct FaultMix: CustomStringConvertible {
    enum Fault: String, CaseIterable {
        case agentCrash = "agent crashes"
        case linkDrop = "dropped connections"
        case diskFull = "full disks"
        case serverRestart = "server restarts"
        case storeStall = "store stalls"
        case serverDiskFull = "server disk full"
        case slowDelivery = "slow delivery"
        case partition = "partitions"
        case lateDelivery = "requests arriving after their connection dropped"
        case clockJump = "clock jumps"
        case repeatedChanges = "change lines repeated late"
        case slowStore = "a slow store"
        case failingCommits = "failing commits"
    }

    /// Relative weight of each fault (absent: never).
    private(set) var weights: [Fault: Int] = [:]
    /// Percent of the people's actions that are a fault instead.
    private(set) var share = 0
    /// Whether the server is backed up early and restored later in the run.
    private(set) var backupAndRestore = false

    static let none = FaultMix()

    private init() {}

    /// Seven runs in ten have faults; of those, each fault kind is left out or weighted 1–4.
    init(random: inout SeededRandom) {
        guard random.chance(70) else { return }
        for fault in Fault.allCases {
            let weight = [0, 0, 1, 2, 4].randomElement(using: &random)!
            if weight > 0 { weights[fault] = weight }
        }
        if weights.isEmpty { weights[Fault.allCases.randomElement(using: &random)!] = 1 }
        share = [4, 12, 25].randomElement(using: &random)!
        backupAndRestore = random.chance(20)
    }

    var hasFaults: Bool { share > 0 }

    /// The fault for an action that rolled `roll` (0..<100) and `pick` (any number), if any.
    func fault(roll: Int, pick: Int) -> Fault? {
        guard roll < share else { return nil }
        let total = weights.values.reduce(0, +)
        var left = pick % total
        for fault in Fault.allCases {
            guard let weight = weights[fault] else { continue }
            if left < weight { return fault }
            left -= weight
        }
        return nil
    }

    var description: String {
        guard hasFaults else { return "no faults" }
        let kinds = Fault.allCases.compactMap { fault in weights[fault].map { "\(fault.rawValue) ×\($0)" } }
        return "\(share)% faults: " + kinds.joined(separator: ", ") + (backupAndRestore ? ", a backup restored" : "")
    }
}
