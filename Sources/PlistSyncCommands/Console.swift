import Foundation

/// Where a command's output goes and its input comes from: the process's stdout, stderr and
/// stdin, or, for a command a test runs inside its process, text in memory.
public final class Console: @unchecked Sendable {
    private let input: [UInt8]?
    private var inputOffset = 0
    private var standardOutput: [UInt8] = []
    private var standardError: [UInt8] = []

    /// The console commands use now: the process's, unless `CLI.run(_:console:)` gave another.
    nonisolated(unsafe) static var current = Console(input: nil)

    /// `input`: what stdin holds; nil for the process's own stdin, stdout and stderr.
    public init(input: String?) {
        self.input = input.map { Array($0.utf8) }
    }

    /// What the command wrote to stdout (a console in memory only).
    public var output: String { String(decoding: standardOutput, as: UTF8.self) }
    /// What the command wrote to stderr (a console in memory only).
    public var errors: String { String(decoding: standardError, as: UTF8.self) }

    /// A line on stdout.
    static func out(_ line: String) {
        // The process's stdout through stdio, buffered as `print` buffers it.
        if current.input == nil { Swift.print(line) } else { current.standardOutput += Array((line + "\n").utf8) }
    }

    /// Bytes on stdout as they are.
    static func write(_ bytes: [UInt8]) {
        if current.input == nil { FileHandle.standardOutput.write(Data(bytes)) } else { current.standardOutput += bytes }
    }

    /// Text on stderr as it is (callers end their lines).
    static func error(_ text: String) {
        if current.input == nil { FileHandle.standardError.write(Data(text.utf8)) } else { current.standardError += Array(text.utf8) }
    }

    /// The next line of stdin without its newline; nil at its end.
    static func readLine() -> String? {
        let console = current
        guard let input = console.input else { return Swift.readLine(strippingNewline: true) }
        guard console.inputOffset < input.count else { return nil }
        let end = input[console.inputOffset...].firstIndex(of: 0x0A) ?? input.count
        defer { console.inputOffset = min(input.count, end + 1) }
        return String(decoding: input[console.inputOffset..<end], as: UTF8.self)
    }

    /// The rest of stdin.
    static func readAll() -> [UInt8] {
        let console = current
        guard let input = console.input else { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        defer { console.inputOffset = input.count }
        return Array(input[console.inputOffset...])
    }
}
