// Shared by the plist harnesses: decode any bytes; if they decode, the written form must be a
// fixed point of write ∘ read in the same format.
func plistRoundTrip(_ bytes: [UInt8], as format: PlistFile.Format) -> CInt {
    guard let (value, _) = try? PlistFile.decode(bytes) else { return 0 }
    let written = PlistFile.encode(value, as: format)
    guard let (again, _) = try? PlistFile.decode(written) else {
        preconditionFailure("a written \(format) plist does not read back")
    }
    precondition(PlistFile.encode(again, as: format) == written, "\(format) plist round trip is not a fixed point")
    return 0
}
