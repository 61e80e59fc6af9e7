/// Builds the server's lines: `TAG OK VERB ...`, `TAG ERR CODE text`, `* ...`.
public enum ResponseLine {
    /// `tag OK words...` with its LF.
    public static func ok(_ tag: String, words: [String]) -> String {
        var line = ""
        line.reserveCapacity(words.reduce(tag.utf8.count + 4) { $0 + 1 + $1.utf8.count })
        line += tag
        line += " OK"
        for word in words {
            line += " "
            line += word
        }
        return line + "\n"
    }

    /// `tag ERR CODE text`; the text has control characters replaced so it stays one line.
    public static func error(_ tag: String, _ error: ProtocolError) -> String {
        tag + " ERR " + error.code.rawValue + " " + sanitized(error.message) + "\n"
    }

    /// An untagged `* words...` line with its LF.
    public static func untagged(_ words: String...) -> String {
        "* " + words.joined(separator: " ") + "\n"
    }

    /// An argument as it goes on the wire: an atom when it can be one, else a JSON string.
    public static func argument(_ text: String) -> String {
        if !text.isEmpty, text.utf8.allSatisfy(RequestParser.isAtomByte),
            text.utf8.first != UInt8(ascii: "{")
        {
            return text
        }
        return ValueJSON.quoted(text)
    }

    /// Replaces CR, LF and other control characters so user text cannot forge a line.
    public static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }
}
