// libFuzzer harness: the line framer, the request parser and the verb table, fed arbitrary
// bytes split into two chunks at a point the input chooses. Property: nothing traps, every line
// handed out is within the limit, and a line the parser accepts parses the same way twice.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    let cut = body.isEmpty ? 0 : Int(first) % (body.count + 1)
    var framer = LineFramer(maxLineBytes: 4096)
    for chunk in [body[..<cut], body[cut...]] {
        framer.append(chunk)
        do {
            while let line = try framer.nextLine() {
                precondition(line.count <= 4096, "framer handed out an over-long line")
                guard let request = try? RequestParser.parse(line) else { continue }
                precondition((try? RequestParser.parse(line)) == request, "parsing is not deterministic")
                _ = try? CommandParser.parse(request)
            }
        } catch {
            return 0
        }
    }
    return 0
}
