// libFuzzer harness: the JSON value decoder. Property: nothing traps, and whatever decodes
// encodes to text that decodes and encodes to the same text again (a fixed point), so a value
// never changes as it travels.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? ValueJSON.decode(bytes) else { return 0 }
    let text = ValueJSON.encode(value)
    guard let again = try? ValueJSON.decode(Array(text.utf8)) else {
        preconditionFailure("encoded value does not decode: \(text)")
    }
    precondition(ValueJSON.encode(again) == text, "JSON round trip is not a fixed point: \(text)")
    return 0
}
