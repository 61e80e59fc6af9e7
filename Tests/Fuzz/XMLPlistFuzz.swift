// libFuzzer harness: the XML plist reader. Property: nothing traps; every integer it
// returns is one the file spells (IntegersInFile, an oracle that scans the bytes itself); and
// whatever reads writes to a file that reads back and writes to the same bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    plistRoundTrip(Array(UnsafeBufferPointer(start: data, count: size)), as: .xml)
}
