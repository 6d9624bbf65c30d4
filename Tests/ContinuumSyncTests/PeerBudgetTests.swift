import ContinuumCore
import ContinuumSync
import ContinuumWire
import Foundation
import Testing

/// The per-peer budget on its own: the time is passed in, so every case is exact.
@Suite("Peer budget: bounded work per peer")
struct PeerBudgetTests {
    private let start = ContinuousClock.now
    private static let bigInterest = WireMessage.interest(
        replace: false,
        (0..<WireLimits.maxInterestEntries).map { PostInterest(post: post($0), hops: 1) }
    )

    static func id32(_ index: Int) -> Data {
        var bytes = Data(count: 32)
        bytes[0] = UInt8(index & 0xFF)
        bytes[1] = UInt8((index >> 8) & 0xFF)
        bytes[2] = UInt8((index >> 16) & 0xFF)
        return bytes
    }

    private static func post(_ index: Int) -> PostID { PostID(unchecked: id32(index)) }

    @Test("an honest session's traffic never waits: pings, a few rounds, a 100,000-post interest sent once")
    func honestTrafficProceeds() {
        var budget = PeerBudget()
        var now = start
        // The whole interest a node may have (25 full frames), at once after the handshake.
        for _ in 0..<25 {
            #expect(budget.charge(Self.bigInterest, now: now) == .proceed)
        }
        // Then a minute of ordinary traffic: a ping every 15 s, a round a minute, a few photo and thumbnail wants.
        for second in 1...60 {
            now = start + .seconds(second)
            if second % 15 == 0 { #expect(budget.charge(.ping(UInt64(second)), now: now) == .proceed) }
            for _ in 0..<8 {
                #expect(budget.charge(.thumbWant(AssetHash(unchecked: Data(count: 32))), now: now) == .proceed)
            }
        }
        #expect(budget.charge(.clock(round: 2, VectorClock()), now: now) == .proceed)
    }

    @Test("a flood is slowed first, then refused with ERROR over budget once it has lasted over a second")
    func floodIsSlowedThenRefused() throws {
        var budget = PeerBudget()
        var now = start
        var delayed = 0
        var refusal: WireError?
        // A frame every 0.5 ms unless the node pauses reading (as the session does): 2,000 INTEREST frames a
        // second offered, far beyond the 2,000 units a second (each costs about 148).
        for _ in 0..<10_000 {
            now += .microseconds(500)
            switch budget.charge(Self.bigInterest, now: now) {
            case .proceed: continue
            case .delay(let pause):
                delayed += 1
                #expect(pause > .zero && pause <= .milliseconds(100), "\(pause)")
                now += pause
            case .refuse(let error):
                refusal = error
            }
            if refusal != nil { break }
        }
        let error = try #require(refusal)
        #expect(error.code == .overBudget)
        #expect(error.message.contains("INTEREST"), "\(error.message)")
        #expect(delayed > 0, "slowed before it was refused")
        // Refused within the 0.5 s allowance (plus the burst it had), not later.
        #expect(now - start < .seconds(2), "\(now - start)")
    }

    @Test("a peer that pauses after a burst gets its budget back and is never refused")
    func burstThenPause() {
        var budget = PeerBudget()
        for round in 0..<20 {
            let base = start + .seconds(5 * round)
            for frame in 0..<25 {
                let verdict = budget.charge(Self.bigInterest, now: base + .milliseconds(frame))
                if case .refuse(let error) = verdict { Issue.record("refused in round \(round): \(error)") }
            }
        }
    }

    @Test("the cost grows with the message: a 4,096-entry INTEREST costs over 100 times a PING")
    func costGrowsWithSize() {
        let ping = PeerBudget.cost(of: .ping(1))
        let small = PeerBudget.cost(of: .interest(replace: false, [PostInterest(post: Self.post(1), hops: 0)]))
        let big = PeerBudget.cost(of: Self.bigInterest)
        #expect(ping > 0)
        #expect(small < big)
        #expect(big > 100 * ping)
        // No message costs more than the burst: one frame alone can always be taken.
        let heads = (0..<WireLimits.maxClockEntries).map { (AuthorID(unchecked: Self.id32($0)), UInt64(1)) }
        let clock = VectorClock(Dictionary(uniqueKeysWithValues: heads))
        #expect(PeerBudget.cost(of: .clock(round: 1, clock)) < PeerBudget.Limits().burst)
    }
}
