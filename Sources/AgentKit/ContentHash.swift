/// FNV-1a over a file's bytes: tells "this file is what we last saw or wrote" without keeping
/// the bytes. 64 bits make an accidental match of two different saves negligible.
enum ContentHash {
    static func of(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
