/// A file's identity for "has it changed since?": FNV-1a 64 of its bytes, in hex. Not a
/// security hash: it tells a save from the file the agent last saw or wrote.
public enum ContentHash {
    public static func of(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
