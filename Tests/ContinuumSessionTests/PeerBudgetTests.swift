import ContinuumCore
import ContinuumSession
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
    static let bigClock = VectorClock(
        Dictionary(
            uniqueKeysWithValues: (0..<WireLimits.maxClockEntries).map { (AuthorID(unchecked: id32($0)), UInt64(1)) }
        )
    )
    static let thousandRecords = [[UInt8]](repeating: [UInt8](repeating: 7, count: 300), count: 1000)

    static func id32(_ index: Int) -> Data {
        var bytes = Data(count: 32)
        bytes[0] = UInt8(index & 0xFF)
        bytes[1] = UInt8((index >> 8) & 0xFF)
        bytes[2] = UInt8((index >> 16) & 0xFF)
        return bytes
    }

    private static func post(_ index: Int) -> PostID { PostID(unchecked: id32(index)) }

    @Test("an honest hub's start is taken: the largest interest and clock the protocol allows, then its records")
    func honestHubStart() {
        var budget = PeerBudget()
        var now = start
        // All at once after the handshake: 25 full INTEREST frames (100,000 posts), a 100,000-entry CLOCK.
        for _ in 0..<25 { #expect(budget.charge(Self.bigInterest, now: now) == nil) }
        #expect(budget.charge(.clock(round: 1, Self.bigClock), now: now) == nil)
        // Then the initial sync it sends: 100 RECORDS frames of 1,000 records, 30 a second, with its ACKs.
        for frame in 0..<100 {
            now = start + .milliseconds(33 * frame)
            #expect(budget.charge(.records(live: false, Self.thousandRecords), now: now) == nil)
            #expect(budget.charge(.ack(VectorClock()), now: now) == nil)
        }
        // And a minute of ordinary traffic: a ping every 15 s, a round, photo and thumbnail wants.
        for second in 4...60 {
            now = start + .seconds(second)
            if second % 15 == 0 { #expect(budget.charge(.ping(UInt64(second)), now: now) == nil) }
            for _ in 0..<8 {
                #expect(budget.charge(.photoWant(AssetHash(unchecked: Self.id32(second)), offset: 0), now: now) == nil)
                #expect(budget.charge(.thumbWant(AssetHash(unchecked: Self.id32(second))), now: now) == nil)
            }
        }
        #expect(budget.charge(.clock(round: 2, VectorClock()), now: now) == nil)
    }

    @Test(
        "a flood of each kind is refused with ERROR over budget, well within a second of flooding",
        arguments: [
            ("PING", WireMessage.ping(1), 0.000_01),
            ("INTEREST", bigInterest, 0.005),
            ("CLOCK", WireMessage.clock(round: 1, bigClock), 0.2),
            (
                "REQUEST",
                WireMessage.request(
                    (0..<WireLimits.maxRanges).map { LogRange(author: AuthorID(unchecked: id32($0)), range: 1...9) }
                ), 0.05
            ),
            ("THUMB_WANT", WireMessage.thumbWant(AssetHash(unchecked: id32(1))), 0.000_01),
        ]
    )
    func floodIsRefused(name: String, message: WireMessage, secondsEach: Double) throws {
        var budget = PeerBudget()
        var now = start
        var refusal: WireError?
        // As fast as the node can take them: each costs the node `secondsEach` to act on.
        for _ in 0..<1_000_000 {
            now += .nanoseconds(Int64(secondsEach * 1e9))
            refusal = budget.charge(message, now: now)
            if refusal != nil { break }
        }
        let error = try #require(refusal, "\(name) never refused")
        #expect(error.code == .overBudget)
        #expect(error.message.contains(message.typeName), "\(error.message)")
        #expect(now - start < .milliseconds(800), "\(name): refused after \(now - start)")
    }

    @Test("a peer that goes into debt, then pauses, gets its budget back and is never refused")
    func burstThenPause() {
        var budget = PeerBudget()
        for round in 0..<20 {
            let now = start + .seconds(10 * round)
            // 27 full INTEREST frames at once: about 10,500 units, more than the burst, less than burst and debt.
            for _ in 0..<27 {
                if let error = budget.charge(Self.bigInterest, now: now) {
                    Issue.record("refused in round \(round): \(error)")
                }
            }
            #expect(budget.tokens < 0, "round \(round) went into debt")
        }
    }

    @Test("an optional message this node does not know costs a PING's unit and one a MiB: a flood of them is refused")
    func optionalMessages() {
        #expect(PeerBudget.cost(of: .optional(type: 0x80, payload: [])) == 1)
        #expect(PeerBudget.cost(of: .optional(type: 0xff, payload: [UInt8](repeating: 0, count: 2_097_152))) == 3)
        var budget = PeerBudget()
        let start = ContinuousClock.now
        let flood = WireMessage.optional(type: 0x90, payload: [UInt8](repeating: 0, count: 4_194_000))
        var refused: WireError?
        for _ in 0..<10_000 where refused == nil { refused = budget.charge(flood, now: start) }
        #expect(refused?.code == .overBudget)
        #expect(refused?.message.contains("last: optional 0x90") == true, "\(String(describing: refused))")
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
        #expect(PeerBudget.cost(of: .clock(round: 1, Self.bigClock)) < PeerBudget.Limits().burst)
    }
}
