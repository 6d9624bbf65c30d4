// libFuzzer target `record`: signed record bytes, as a RECORDS or PUSH frame carries them, through
// SignedRecord(bytes:) (RecordFormat.decode) and, for what decodes, the Ed25519 check. Built and run by
// scripts/fuzz.sh; Docs/FUZZING.md.
//
// Refusals (a RecordError) are expected. A bug is a crash, a trap, an AddressSanitizer report, or one of these
// checks failing for a record that decodes:
// - its content re-encodes (RecordFormat.encode) to exactly the signed bytes, and the signature is the 64 bytes
//   after them: the encoding is canonical, so a record has one id;
// - RecordFormat.validate accepts the content;
// - verify() either refuses with badSignature or returns the same record.

import ContinuumCore
import Foundation

/// When set, every input must decode and verify: scripts/fuzz.sh checks the seed corpus this way.
let expectValid = getenv("CONTINUUM_FUZZ_EXPECT_VALID") != nil

func fail(_ what: String, _ bytes: [UInt8]) -> Never {
    fatalError("record: \(what); input \(bytes.count) bytes: \(Hex.encode(bytes.prefix(256)))")
}

func check(_ bytes: [UInt8]) {
    let record: SignedRecord
    do throws(RecordError) {
        record = try SignedRecord(bytes: bytes)
    } catch {
        guard !error.description.isEmpty else { fail("a refusal without a message", bytes) }
        if expectValid { fail("seed does not decode: \(error)", bytes) }
        return
    }
    do throws(RecordError) {
        let signed = try RecordFormat.encode(record.content)
        guard signed.count + RecordFormat.signatureBytes == bytes.count, bytes.starts(with: signed),
            record.signature.elementsEqual(bytes.dropFirst(signed.count))
        else { fail("\(record.kind.name) re-encodes differently", bytes) }
        try RecordFormat.validate(record.content)
    } catch {
        fail("decoded \(record.kind.name) fails encoding or validation: \(error)", bytes)
    }
    do throws(RecordError) {
        let verified = try record.verify()
        guard verified.record == record else { fail("verify() returned another record", bytes) }
    } catch {
        guard error == .badSignature else { fail("verify() threw \(error)", bytes) }
        if expectValid { fail("seed does not verify", bytes) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecord(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    check(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}
