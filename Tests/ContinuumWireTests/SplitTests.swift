import ContinuumWire
import Testing

@Suite("Frames split anywhere")
struct SplitTests {
    @Test("a frame cut at every byte boundary decodes the same", arguments: Samples.messages)
    func everySplit(message: WireMessage) throws {
        let bytes = WireCodec.encode(message)
        for cut in 0...bytes.count {
            var decoder = FrameDecoder()
            decoder.append(bytes[..<cut])
            if cut < bytes.count {
                #expect(try decoder.next() == nil, "cut at \(cut)")
                #expect(decoder.bufferedBytes == cut)
            }
            decoder.append(bytes[cut...])
            #expect(try decoder.next() == message, "cut at \(cut)")
            #expect(try decoder.next() == nil)
            #expect(decoder.bufferedBytes == 0)
        }
    }

    @Test("a stream of every message, fed one byte at a time")
    func bytewise() {
        let bytes = Samples.messages.flatMap(WireCodec.encode)
        let outcome = feedBytewise(bytes)
        #expect(outcome.error == nil)
        #expect(outcome.messages == Samples.messages)
        #expect(outcome.leftover == 0)
    }

    @Test("a stream in pieces of every size from 1 to 97 bytes")
    func pieces() {
        let bytes = Samples.messages.flatMap(WireCodec.encode)
        for size in 1...97 {
            var pieces = Array(repeating: size, count: bytes.count / size)
            if bytes.count % size > 0 { pieces.append(bytes.count % size) }
            let outcome = feed(bytes, pieces: pieces)
            #expect(outcome.error == nil)
            #expect(outcome.messages == Samples.messages, "pieces of \(size)")
        }
    }

    @Test("a 1 MiB frame fed in 1000-byte pieces is held until complete, then decoded")
    func largeFrame() throws {
        let records = (0..<64).map { [UInt8](repeating: UInt8($0), count: 16_384) }
        let bytes = WireCodec.encode(.records(live: false, records))
        var decoder = FrameDecoder()
        var offset = 0
        var decoded: [WireMessage] = []
        while offset < bytes.count {
            let end = min(offset + 1000, bytes.count)
            decoder.append(bytes[offset..<end])
            offset = end
            if let message = try decoder.next() { decoded.append(message) }
            #expect(decoded.isEmpty == (offset < bytes.count))
        }
        #expect(decoded == [.records(live: false, records)])
        #expect(decoder.bufferedBytes == 0)
    }
}
