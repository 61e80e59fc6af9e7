import Foundation

/// README.md's shell examples (```sh blocks) turned into one bash script that runs them as
/// written, in order, a line a step (helpers in Tests/Readme/prelude.sh). A block may be
/// preceded by a marker the rendered README does not show:
/// `<!-- readme-test: skip REASON -->` (not run), or `<!-- readme-test: before COMMAND -->`
/// (a prelude helper run first: the state the text assumes, such as a conflict to resolve).
/// Lines are rewritten only where a person would do something a script cannot: a password
/// typed at a prompt, a server or agent left running in another terminal, restarting the agent
/// when the text says so (after the block).
struct ReadmeScript {
    struct Block: Equatable {
        var lines: [String]
        var skip: String?
        var before: String?
        /// The README line the block starts on (1-based).
        var line: Int
    }

    static let marker = "<!-- readme-test:"

    /// The ```sh blocks of `markdown`, with their markers.
    static func blocks(in markdown: String) -> [Block] {
        let lines = markdown.components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            let trimmed = lines[index].trimmingCharacters(in: .whitespaces)
            guard trimmed == "```sh" else {
                index += 1
                continue
            }
            let indent = lines[index].prefix { $0 == " " }.count
            var block = Block(lines: [], line: index + 1)
            if let previous = lines[..<index].last(where: { !$0.trimmingCharacters(in: .whitespaces).isEmpty }),
               let directive = directive(previous) {
                if directive.hasPrefix("skip ") { block.skip = String(directive.dropFirst(5)) }
                if directive.hasPrefix("before ") { block.before = String(directive.dropFirst(7)) }
            }
            index += 1
            while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
                block.lines.append(String(lines[index].dropFirst(min(indent, lines[index].prefix { $0 == " " }.count))))
                index += 1
            }
            blocks.append(block)
            index += 1
        }
        return blocks
    }

    private static func directive(_ line: String) -> String? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix(marker), trimmed.hasSuffix("-->") else { return nil }
        return trimmed.dropFirst(marker.count).dropLast(3).trimmingCharacters(in: .whitespaces)
    }

    /// The lines of a block as commands: continuations joined, blank lines and whole-line
    /// comments left out; each with its trailing comment (which may say "(re)start the agent").
    static func commands(_ lines: [String]) -> [(command: String, comment: String)] {
        var joined: [String] = []
        var pending = ""
        for line in lines {
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            joined.append(pending + line)
            pending = ""
        }
        return joined.compactMap { line in
            let (command, comment) = splitComment(line)
            return command.isEmpty ? nil : (command, comment)
        }
    }

    /// A line split at its comment: " #" outside quotes.
    private static func splitComment(_ line: String) -> (String, String) {
        var quote: Character?
        var previous: Character = " "
        for (offset, character) in line.enumerated() {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "#", previous == " " {
                let cut = line.index(line.startIndex, offsetBy: offset)
                return (line[..<cut].trimmingCharacters(in: .whitespaces), String(line[cut...]))
            }
            previous = character
        }
        return (line.trimmingCharacters(in: .whitespaces), "")
    }

    /// Quoted for bash, as one word.
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// The bash steps for one command of the README.
    static func steps(_ command: String) -> [String] {
        let words = command.split(separator: " ").map(String.init)
        let subcommand = words.count > 1 && (words[0] == "$B" || words[0] == "plistsync") ? Array(words.dropFirst()) : []
        var steps = ["readme_step \(quoted(command))"]
        if command.hasPrefix("./Deploy/test.sh") {
            steps.append("echo 'not run here: it is the command that runs this test'")
            return steps
        }
        let check = "|| readme_failed $? \(quoted(command))"
        if command.hasPrefix("./Deploy/quickstart.sh") {
            steps.append("readme_start server \(quoted(command)) \(check)")
        } else if subcommand.first == "agent" {
            steps.append("readme_start agent \(quoted(command)) \(check)")
        } else if !command.contains("--password-stdin"),
                  subcommand.starts(with: ["login"]) || subcommand.starts(with: ["user", "add"]) || subcommand.starts(with: ["user", "passwd"]) {
            steps.append("readme_type_password \(quoted(command)) \(check)")
        } else {
            steps.append("\(command) \(check)")
        }
        return steps
    }

    /// The whole script: the prelude, then every block's steps (or why it is skipped).
    static func script(for blocks: [Block], prelude: String) -> String {
        var script = prelude + "\n"
        for block in blocks {
            script += "\necho; echo '### README.md line \(block.line)'\n"
            if let reason = block.skip {
                script += "echo \(quoted("skipped: " + reason))\n"
                continue
            }
            if let before = block.before {
                script += "echo \(quoted("(before it: " + before + ")"))\n\(before) || readme_failed $? \(quoted(before))\n"
            }
            let commands = commands(block.lines)
            for (command, _) in commands {
                script += steps(command).joined(separator: "\n") + "\n"
            }
            // "then (re)start the agent", said of a line, is done once the block's lines are.
            if commands.contains(where: { $0.comment.contains("(re)start the agent") }) {
                script += "readme_restart agent || readme_failed $? 'restarting the agent'\n"
            }
        }
        return script + "\necho; echo 'README: every example ran'\n"
    }
}
