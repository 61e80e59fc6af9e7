import COpenSSL
import Foundation

/// Password hashing and token material, from OpenSSL's libcrypto.
///
/// PBKDF2-HMAC-SHA256 at OWASP's 2023 work factor (600,000 iterations): libcrypto is already a
/// dependency for TLS, it is FIPS-approved, and the iteration count is stored in each hash so it
/// can be raised later without breaking old logins. It is CPU-bound, so the server runs it on
/// a thread of its own (`LoginGate`), never on the loop or the commits' thread pool.
public enum PasswordHasher {
    /// OWASP's recommendation for PBKDF2-HMAC-SHA256.
    public static let defaultIterations = 600_000
    /// Fewer than this is refused even when asked for (tests use it to stay fast).
    public static let minimumIterations = 1_000

    /// A self-describing hash: `pbkdf2-sha256$<iterations>$<salt b64>$<key b64>`.
    public static func hash(_ password: String, iterations: Int = defaultIterations) -> String {
        let salt = Crypto.randomBytes(16)
        let key = derive(password, salt: salt, iterations: iterations)
        return "pbkdf2-sha256$\(iterations)$\(Data(salt).base64EncodedString())$\(Data(key).base64EncodedString())"
    }

    /// Whether `password` matches `stored`; constant-time in the comparison.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let iterations = Int(parts[1]), iterations > 0,
            let salt = Data(base64Encoded: String(parts[2])), let expected = Data(base64Encoded: String(parts[3]))
        else { return false }
        let key = derive(password, salt: Array(salt), iterations: iterations, length: expected.count)
        return Crypto.constantTimeEqual(key, Array(expected))
    }

    private static func derive(_ password: String, salt: [UInt8], iterations: Int, length: Int = 32) -> [UInt8] {
        var key = [UInt8](repeating: 0, count: length)
        let passwordBytes = Array(password.utf8)
        _ = passwordBytes.withUnsafeBufferPointer { passwordBuffer in
            passwordBuffer.withMemoryRebound(to: CChar.self) { passwordChars in
                PKCS5_PBKDF2_HMAC(
                    passwordChars.baseAddress, Int32(passwordChars.count), salt, Int32(salt.count),
                    Int32(iterations), EVP_sha256(), Int32(length), &key)
            }
        }
        return key
    }
}

/// Small libcrypto helpers: randomness, SHA-256, constant-time comparison.
public enum Crypto {
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else {
            fatalError("the system random source failed; refusing to make weak secrets")
        }
        return bytes
    }

    public static func sha256Hex(_ text: String) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let bytes = Array(text.utf8)
        EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil)
        return hex(digest)
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && CRYPTO_memcmp(a, b, a.count) == 0
    }

    /// A new invitation secret: `psi_` and 32 random bytes in hex.
    public static func newInvitationSecret() -> String {
        "psi_" + hex(randomBytes(32))
    }

    /// A new login token: `pst_` and 32 random bytes in hex.
    public static func newToken() -> String {
        "pst_" + hex(randomBytes(32))
    }
}
