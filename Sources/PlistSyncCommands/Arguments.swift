/// A usage mistake: printed with the command's usage line, exit status 64 (EX_USAGE).
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A runtime failure: one clear line, exit status 1.
struct RuntimeError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A small hand-written parser in swift-argument-parser's spirit: `--name value`,
/// `--name=value`, boolean `--flag`s, and positionals.
struct Arguments {
    private var options: [String: String] = [:]
    private var flags: Set<String> = []
    private(set) var positionals: [String] = []

    /// `valueOptions` take a value; `flagOptions` do not; anything else starting with `--` is an error.
    init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String>) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if flagOptions.contains(name) {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else if valueOptions.contains(name) {
                if let inlineValue {
                    options[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                    options[name] = arguments[index]
                    index += 1
                }
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    func value(_ name: String) -> String? { options[name] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    func integer(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = options[name] else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("--\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
