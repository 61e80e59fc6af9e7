/// One parsed client line: `TAG VERB ARG... [PAYLOAD]`.
public struct RequestLine: Equatable, Sendable {
    /// The client's tag, echoed in the reply.
    public var tag: String
    /// The verb in upper case (verbs are case-insensitive, as in Redis).
    public var verb: String
    /// Atoms and decoded JSON-string arguments, in order.
    public var arguments: [String]
    /// The trailing JSON object in canonical form (as `ValueJSON.encode` writes it), where the
    /// line has one: a PUT stores exactly this text.
    public private(set) var payloadJSON: String?
    private var decodedPayload: Fields?

    public init(tag: String, verb: String, arguments: [String] = [], payload: Fields? = nil) {
        self.init(tag: tag, verb: verb, arguments: arguments, payload: payload.map(ParsedPayload.decoded))
    }

    init(tag: String, verb: String, arguments: [String], payload: ParsedPayload?) {
        self.tag = tag
        self.verb = verb
        self.arguments = arguments
        switch payload {
        case .canonical(let text)?:
            payloadJSON = text
        case .decoded(let fields)?:
            payloadJSON = ValueJSON.encode(fields: fields)
            decodedPayload = fields
        case nil:
            break
        }
    }

    /// The trailing JSON object, decoded (from the canonical text when the parser kept only that).
    public var payload: Fields? {
        decodedPayload ?? payloadJSON.flatMap { try? ValueJSON.decodeFields($0.utf8) }
    }

    /// Equal canonical texts are equal values, however each line got its payload.
    public static func == (lhs: RequestLine, rhs: RequestLine) -> Bool {
        lhs.tag == rhs.tag && lhs.verb == rhs.verb && lhs.arguments == rhs.arguments && lhs.payloadJSON == rhs.payloadJSON
    }
}

/// A line's trailing JSON object as the parser left it.
enum ParsedPayload {
    /// Already canonical: kept as text, never decoded (the common PUT).
    case canonical(String)
    case decoded(Fields)

    var fields: Fields? {
        switch self {
        case .canonical(let text): try? ValueJSON.decodeFields(text.utf8)
        case .decoded(let fields): fields
        }
    }
}

/// Why a line could not become a `RequestLine`.
public enum LineParseError: Error, Equatable {
    /// The tag itself is unreadable: answer with an untagged `* ERR`.
    case untagged(ProtocolError)
    /// The tag was read; answer `TAG ERR ...`.
    case tagged(String, ProtocolError)
}

/// Parses request lines; pure, so every edge case is tested without a socket.
public enum RequestParser {
    /// Longest tag a client may choose.
    public static let maxTagLength = 32

    /// Parses one line (without its LF). Returns nil for a blank line, which is ignored.
    public static func parse(_ line: some Collection<UInt8>) throws(LineParseError) -> RequestLine? {
        let bytes = Array(line)
        var index = 0
        skipSpaces(bytes, &index)
        if index == bytes.count { return nil }

        let tagStart = index
        while index < bytes.count, bytes[index] != 0x20 { index += 1 }
        let tagBytes = bytes[tagStart..<index]
        guard tagBytes.count <= maxTagLength, tagBytes.allSatisfy(isTagByte) else {
            throw .untagged(ProtocolError(.badRequest, "unreadable tag: a tag is 1-32 of [A-Za-z0-9._-]"))
        }
        let tag = UTF8Text.decode(bytes, tagStart..<index)
        func fail(_ message: String) -> LineParseError {
            .tagged(tag, ProtocolError(.badRequest, message))
        }
        guard UTF8Text.isValid(bytes) else {
            throw fail("line is not valid UTF-8")
        }

        skipSpaces(bytes, &index)
        guard index < bytes.count else { throw fail("missing verb") }
        let verbStart = index
        while index < bytes.count, bytes[index] != 0x20 { index += 1 }
        let verbBytes = bytes[verbStart..<index]
        guard verbBytes.allSatisfy(isAtomByte) else { throw fail("malformed verb") }
        // Atom bytes are ASCII, so upper-casing them byte by byte is exact (and most verbs
        // come upper-cased already: no copy then).
        let isLower = { (byte: UInt8) in byte >= 0x61 && byte <= 0x7A }
        let verb = verbBytes.contains(where: isLower)
            ? String(decoding: verbBytes.map { isLower($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
            : UTF8Text.decode(bytes, verbStart..<index)

        do {
            let (arguments, payload) = try readArguments(bytes, from: index, keepingCanonicalText: true)
            return RequestLine(tag: tag, verb: verb, arguments: arguments, payload: payload)
        } catch {
            throw .tagged(tag, error)
        }
    }

    /// Reads space-separated atoms and JSON strings from `index` to the end, with an optional
    /// trailing JSON object; shared by the request parser and the client's reply parser. With
    /// `keepingCanonicalText`, a payload that is already canonical is kept as text, undecoded.
    static func readArguments(
        _ bytes: [UInt8], from start: Int, keepingCanonicalText: Bool = false
    ) throws(ProtocolError) -> ([String], ParsedPayload?) {
        var index = start
        var arguments: [String] = []
        // Room for the most any verb takes (LIST's six): one allocation, not one per growth.
        arguments.reserveCapacity(6)
        var payload: ParsedPayload?
        while true {
            skipSpaces(bytes, &index)
            guard index < bytes.count else { break }
            guard payload == nil else { throw ProtocolError(.badRequest, "text after the JSON payload") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                if keepingCanonicalText, let end = CanonicalJSON.objectEnd(bytes, from: index) {
                    payload = .canonical(UTF8Text.decode(bytes, index..<end))
                    index = end
                    continue
                }
                let (value, end) = try ValueJSON.decodePrefix(bytes, from: index)
                guard case .dictionary(let fields) = value else { throw ProtocolError(.badRequest, "payload must be an object") }
                payload = .decoded(fields)
                index = end
            case UInt8(ascii: "\""):
                var reader = JSONReader(bytes: bytes, index: index)
                do {
                    arguments.append(try reader.readString())
                } catch {
                    throw ProtocolError(.badRequest, "bad quoted argument: \(error.message)")
                }
                index = reader.index
                guard index == bytes.count || bytes[index] == 0x20 else {
                    throw ProtocolError(.badRequest, "quoted argument must be followed by a space")
                }
            default:
                let atomStart = index
                while index < bytes.count, bytes[index] != 0x20 { index += 1 }
                let atom = bytes[atomStart..<index]
                guard atom.allSatisfy(isAtomByte) else {
                    throw ProtocolError(.badRequest, "argument \(arguments.count + 1) has a quote or control character")
                }
                arguments.append(UTF8Text.decode(bytes, atomStart..<index))
            }
        }
        return (arguments, payload)
    }


    private static func skipSpaces(_ bytes: [UInt8], _ index: inout Int) {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    static func isTagByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    public static func isAtomByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte != 0x7F && byte != UInt8(ascii: "\"")
    }
}
