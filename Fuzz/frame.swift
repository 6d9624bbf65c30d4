// libFuzzer target `frame`: the byte stream a peer sends, through FrameDecoder and WireCodec as the NIO handler
// (Sources/ContinuumSync/FrameHandlers.swift) feeds it. Built and run by scripts/fuzz.sh; Docs/FUZZING.md.
//
// Refusals (a WireError) are expected. A bug is a crash, a trap, an AddressSanitizer report, or one of these
// checks failing:
// - the stream fed whole, in pieces whose sizes come from the input, and byte by byte gives the same messages,
//   the same error and the same leftover;
// - every decoded message passes WireCodec.validate and re-encodes to exactly the bytes it was decoded from;
// - the input read as a type byte and a payload, straight into WireCodec.decodePayload, decodes or throws, and
//   what decodes re-encodes to that payload.

import ContinuumCore
import ContinuumWire
import Foundation

/// When set, every input must decode whole and without an error: scripts/fuzz.sh checks the seed corpus this way.
let expectValid = getenv("CONTINUUM_FUZZ_EXPECT_VALID") != nil

/// What a fresh decoder makes of a stream fed in the given pieces (one piece by default).
struct Outcome: Equatable {
    var messages: [WireMessage] = []
    var consumed: [[UInt8]] = []
    var error: WireError?
    var leftover = 0
}

func feed(_ bytes: [UInt8], pieces: [Int]) -> Outcome {
    var decoder = FrameDecoder()
    var outcome = Outcome()
    var offset = 0
    var frameStart = 0
    for size in pieces {
        decoder.append(bytes[offset..<offset + size])
        offset += size
        do throws(WireError) {
            while let message = try decoder.next() {
                outcome.messages.append(message)
                // The decoder has consumed everything but what it still holds.
                let frameEnd = offset - decoder.bufferedBytes
                outcome.consumed.append(Array(bytes[frameStart..<frameEnd]))
                frameStart = frameEnd
            }
        } catch {
            outcome.error = error
            return outcome
        }
    }
    outcome.leftover = decoder.bufferedBytes
    return outcome
}

/// The input's FNV-1a hash: seeds the choices below, so that a crash reproduces from its file alone.
func fnv1a(_ bytes: [UInt8]) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
}

/// Piece sizes of 1 to 64 bytes that add up to the input's length, each input cut its own way.
func pieces(of bytes: [UInt8]) -> [Int] {
    var state = fnv1a(bytes)
    var result: [Int] = []
    var left = bytes.count
    while left > 0 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let size = min(left, Int(state >> 58) + 1)
        result.append(size)
        left -= size
    }
    return result
}

func fail(_ what: String, _ bytes: [UInt8]) -> Never {
    fatalError("frame: \(what); input \(bytes.count) bytes: \(Hex.encode(bytes.prefix(256)))")
}

func check(_ bytes: [UInt8]) {
    let whole = feed(bytes, pieces: bytes.isEmpty ? [] : [bytes.count])
    for (message, frame) in zip(whole.messages, whole.consumed) {
        do throws(WireError) {
            try WireCodec.validate(message)
        } catch {
            fail("decoded \(message.typeName) fails validation: \(error.message)", bytes)
        }
        guard WireCodec.encode(message) == frame else { fail("\(message.typeName) re-encodes differently", bytes) }
    }
    guard feed(bytes, pieces: pieces(of: bytes)) == whole else { fail("fed in pieces, the outcome differs", bytes) }
    // Byte by byte reaches every split point, but costs a decoder call per byte: short inputs only.
    if bytes.count <= 512 {
        guard feed(bytes, pieces: Array(repeating: 1, count: bytes.count)) == whole else {
            fail("fed byte by byte, the outcome differs", bytes)
        }
    }
    // A stream of whole frames, repeated past 64 KiB and fed in reads of 4093 bytes, as a long session would be:
    // the decoder then drops consumed bytes from the front of a buffer that still holds a partial frame. Costly,
    // so for one clean input in 64.
    if whole.error == nil, whole.leftover == 0, !whole.messages.isEmpty, fnv1a(bytes) % 64 == 0 {
        let copies = (1 << 16) / bytes.count + 2
        let stream = Array([[UInt8]](repeating: bytes, count: copies).joined())
        let reads = Array(repeating: 4093, count: stream.count / 4093) + [stream.count % 4093]
        let replay = feed(stream, pieces: reads.filter { $0 > 0 })
        guard replay.error == nil, replay.leftover == 0,
            replay.messages == Array([[WireMessage]](repeating: whole.messages, count: copies).joined())
        else { fail("repeated \(copies) times, the stream decodes differently", bytes) }
    }
    if expectValid, whole.messages.isEmpty || whole.error != nil || whole.leftover != 0 {
        fail("seed does not decode whole: \(whole.error?.message ?? "\(whole.leftover) bytes left over")", bytes)
    }

    // The payload decoder alone, without the frame header's checks.
    guard let type = bytes.first else { return }
    let payload = bytes[1...]
    do throws(WireError) {
        let message = try WireCodec.decodePayload(type: type, payload: payload)
        let reencoded = WireCodec.encode(message).dropFirst(WireCodec.lengthPrefixBytes + WireCodec.headerBytes)
        guard reencoded.elementsEqual(payload) else {
            fail("payload of \(message.typeName) re-encodes differently", bytes)
        }
    } catch {
        guard !error.message.isEmpty else { fail("a refusal without a message", bytes) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrame(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    check(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}
