import ContinuumCore
import ContinuumTestSupport
import ContinuumWire
import Testing

/// Random and mutated input never crashes the decoder: each input decodes or throws a ``WireError``. Whatever
/// decodes is valid and re-encodes to exactly the bytes it came from (the encoding is canonical).
@Suite("Fuzzing the frame decoder")
struct FuzzTests {
    /// Checks an outcome: every decoded message passes validation and re-encodes to the bytes that were consumed.
    static func check(_ bytes: [UInt8], _ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) {
        let reencoded = outcome.messages.flatMap(WireCodec.encode)
        #expect(Array(bytes.prefix(reencoded.count)) == reencoded, sourceLocation: sourceLocation)
        for message in outcome.messages {
            #expect(throws: Never.self, sourceLocation: sourceLocation) { try WireCodec.validate(message) }
        }
        if outcome.error == nil {
            #expect(reencoded.count + outcome.leftover == bytes.count, sourceLocation: sourceLocation)
        }
    }

    /// Random pieces that add up to `count`.
    static func pieces(_ count: Int, _ random: inout SplitMix64) -> [Int] {
        var result: [Int] = []
        var left = count
        while left > 0 {
            let size = Int.random(in: 1...min(left, 16), using: &random)
            result.append(size)
            left -= size
        }
        return result
    }

    static let types = (0...255).map(UInt8.init).filter { WireMessage.typeName(of: $0) != nil }

    @Test("20,000 random byte strings")
    func randomBytes() {
        var random = SplitMix64(seed: 0x5EED)
        var decodedCount = 0
        var codes: [UInt16: Int] = [:]
        for round in 0..<20_000 {
            var bytes: [UInt8]
            let length = Int.random(in: 0...120, using: &random)
            let body = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            if round % 2 == 0 {
                bytes = body
            } else {
                // A plausible header, so that payload decoding is reached: a length near the body's, version 1
                // mostly, and a known type mostly.
                let stated = max(0, body.count + 2 + Int.random(in: -3...3, using: &random))
                let version: UInt8 = round % 7 == 0 ? UInt8.random(in: 0...3, using: &random) : 1
                let type =
                    round % 5 == 0
                    ? UInt8.random(in: 0...255, using: &random) : Self.types.randomElement(using: &random)!
                bytes = be32(UInt32(stated)) + [version, type] + body
            }
            let outcome = feed(bytes)
            Self.check(bytes, outcome)
            decodedCount += outcome.messages.count
            if let error = outcome.error { codes[error.code.rawValue, default: 0] += 1 }

            // And the payload alone, straight into the codec.
            do throws(WireError) {
                let message = try WireCodec.decodePayload(type: bytes.first ?? 0, payload: body[...])
                #expect(Array(WireCodec.encode(message).dropFirst(6)) == body)
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        // The inputs reached more than the frame header.
        #expect(decodedCount > 0)
        #expect(codes[WireError.Code.malformedFrame.rawValue, default: 0] > 1000)
        #expect(codes[WireError.Code.frameTooLarge.rawValue, default: 0] > 1000)
        #expect(codes[WireError.Code.unsupportedVersion.rawValue, default: 0] > 100)
    }

    @Test("20,000 single-byte mutations of valid frames, fed whole and in random pieces")
    func mutations() {
        var random = SplitMix64(seed: 0xF00D)
        let frames =
            Samples.messages.map(WireCodec.encode) + [
                WireCodec.encode(.records(live: false, (0..<5).map { [UInt8](repeating: $0, count: 20) })),
                WireCodec.encode(
                    .clock(
                        round: 1,
                        VectorClock((1...6).map { (author($0), UInt64($0)) }.reduce(into: [:]) { $0[$1.0] = $1.1 })
                    )
                ),
                WireCodec.encode(.request((1...4).map { LogRange(author: author($0), range: 1...UInt64($0)) })),
            ]
        var decoded = 0
        var refused = 0
        for _ in 0..<20_000 {
            var bytes = frames.randomElement(using: &random)!
            let position = Int.random(in: 0..<bytes.count, using: &random)
            bytes[position] ^= UInt8.random(in: 1...255, using: &random)
            let outcome = feed(bytes)
            Self.check(bytes, outcome)
            #expect(feed(bytes, pieces: Self.pieces(bytes.count, &random)) == outcome)
            decoded += outcome.messages.count
            if outcome.error != nil { refused += 1 }
        }
        // Mutations in ids, nonces and counters still decode; most others are refused.
        #expect(decoded > 1000)
        #expect(refused > 1000)
    }
}
