import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// Every message type in every state of the session rules, with no sockets and no processes. The expected actions
/// are written out by hand from PROTOCOL.md §7, not computed by the machine.
@Suite("Session machine: every message in every state")
struct SessionMachineTests {
    private let now = ContinuousClock.now
    private static let names = Fixture.everyMessage.map(\.name)

    /// What the machine does with each message when it is open and idle.
    private static func expected(_ name: String) -> [Machine.Action] {
        let record = Fixture.record(1, 1).bytes
        let hash = Fixture.hash(1)
        switch name {
        case "HELLO": return [.close(WireError(.unexpectedMessage, "HELLO after the handshake"))]
        case "ERROR": return [.peerRefused(WireError(.internal, "boom"))]
        case "PING": return [.send(.pong(7))]
        case "CLOCK":
            return [.rememberClock(sent: nil, received: Fixture.clock), .peerClockKnown(moved: false), .startStreaming]
        case "CLOCK_SINCE": return [.send(.clockUnknown(round: 2))]
        case "CLOCK_UNKNOWN":
            return [.close(WireError(.unexpectedMessage, "CLOCK_UNKNOWN for round 9, which this node did not start"))]
        case "RECORDS": return [.verify([record], .catchUp)]
        case "RECORDS live": return [.verify([record], .live)]
        case "PUSH": return [.verify([record], .push)]
        case "ACK": return [.windowOpened]
        case "REQUEST", "CLOCK_SINCE known": return [.startStreaming]
        case "DONE": return [.roundFinished(1), .checkGaps]
        case "INTEREST": return [.interest(replace: true, [PostInterest(post: Fixture.post(1), hops: 0)])]
        case "PHOTO_WANT", "THUMB_WANT", "PHOTOS_WANT": return [.startServer]
        case "PHOTOS":
            return [
                .close(
                    WireError(
                        .unexpectedMessage,
                        "PHOTOS for a photo this node did not ask the peer for (\(hash.short))"
                    )
                )
            ]
        case "PHOTO_DATA":
            // Never asked for: refused.
            return [
                .close(
                    WireError(
                        .unexpectedMessage,
                        "PHOTO_DATA for a photo this node did not ask the peer for (\(hash.short))"
                    )
                )
            ]
        case "PHOTO_END": return [.photo(.end(hash, totalBytes: 3))]
        case "PHOTO_MISSING": return [.photo(.missing(hash))]
        case "THUMB_DATA":
            return [
                .close(
                    WireError(
                        .unexpectedMessage,
                        "THUMB_DATA for a thumbnail this node did not ask the peer for (\(hash.short))"
                    )
                )
            ]
        case "THUMB_MISSING": return [.photo(.thumbnailMissing(hash))]
        case "HAVE": return [.scheduleRepair(after: .milliseconds(200))]
        default: return []  // PONG, OFFER, TREE, an optional type
        }
    }

    private static func message(_ name: String) -> WireMessage {
        Fixture.everyMessage.first { $0.name == name }!.message
    }

    /// The messages after which the session has ended.
    private static let ending: Set<String> = ["HELLO", "ERROR", "CLOCK_UNKNOWN", "PHOTO_DATA", "THUMB_DATA", "PHOTOS"]

    @Test("open and idle: each message gets its answer, refusals end the session", arguments: names)
    func open(name: String) {
        var machine = Machine(peer: Fixture.peer)
        #expect(machine.receive(Self.message(name), now: now) == Self.expected(name))
        #expect(machine.phase == (Self.ending.contains(name) ? .closed : .open))
    }

    @Test("while the peer streams a round (after OFFER): the same answers", arguments: names)
    func receivingRound(name: String) {
        var machine = Machine(peer: Fixture.peer)
        #expect(machine.receive(.offer(round: 1, records: 5, bytes: 500), now: now) == [])
        #expect(machine.receivingRound)
        #expect(machine.receive(Self.message(name), now: now) == Self.expected(name))
        if Self.ending.contains(name) {
            #expect(machine.phase == .closed)
        } else {
            #expect(machine.receivingRound == (name != "DONE"))
        }
    }

    @Test("while records are verified: each message waits, then is acted on in order", arguments: names)
    func verifying(name: String) {
        var machine = Machine(peer: Fixture.peer)
        let first = Fixture.record(3, 1)
        #expect(machine.receive(.records(live: true, [first.bytes]), now: now) == [.verify([first.bytes], .live)])
        #expect(machine.receive(Self.message(name), now: now) == [], "held back while verifying")
        #expect(machine.isBusy)
        let ack = Machine.Action.send(.ack(VectorClock([first.ref.author: 1])))
        if Self.message(name).isRecords {
            // The live record is stored at once, and the frame that waited is verified beside the store.
            #expect(
                machine.verified([first], delivery: .live, bytes: 32)
                    == [.store(Self.batch(.live, first))] + Self.expected(name)
            )
            let after = machine.stored(StoreOutcome(stored: 1, clock: VectorClock([first.ref.author: 1])))
            #expect(after == [ack, .storedFromPeer(1)])
            return
        }
        // The live record is stored at once; the message waits for the store too.
        #expect(machine.verified([first], delivery: .live, bytes: 32) == [.store(Self.batch(.live, first))])
        let after = machine.stored(StoreOutcome(stored: 1, clock: VectorClock([first.ref.author: 1])))
        #expect(after.first == ack)
        #expect(Array(after.dropFirst(2)) == Self.expected(name), "\(after)")
        #expect(after.dropFirst().first == .storedFromPeer(1))
    }

    @Test(
        "while a batch is stored: a frame of records is verified beside it, any other message waits for the store",
        arguments: names
    )
    func storing(name: String) {
        var machine = Machine(peer: Fixture.peer)
        let first = Fixture.record(3, 1)
        _ = machine.receive(.records(live: false, [first.bytes]), now: now)
        // A catch-up record waits for more, with a timer; the timer hands the batch to storage.
        #expect(machine.verified([first], delivery: .catchUp, bytes: 32) == [.scheduleFlush(generation: 1)])
        #expect(machine.flushTimerFired(1) == [.store(Self.batch(.catchUp, first))])
        #expect(machine.readsBesideStore, "a store alone is under way: the next frame may be read")
        let ack = Machine.Action.send(.ack(VectorClock([first.ref.author: 1])))
        if Self.message(name).isRecords {
            #expect(machine.receive(Self.message(name), now: now) == Self.expected(name))
            #expect(machine.verifying)
            #expect(!machine.readsBesideStore, "one verification at a time")
            #expect(machine.stored(StoreOutcome(stored: 0, clock: VectorClock([first.ref.author: 1]))) == [ack])
            #expect(machine.isBusy, "the frame's verification is still under way")
            return
        }
        #expect(machine.receive(Self.message(name), now: now) == [])
        #expect(machine.isBusy)
        #expect(!machine.readsBesideStore, "a message waits: no frame may overtake it")
        let after = machine.stored(StoreOutcome(stored: 0, clock: VectorClock([first.ref.author: 1])))
        #expect(after.first == ack)
        #expect(Array(after.dropFirst()) == Self.expected(name))
    }

    @Test("a message that is not a record first stores what is pending", arguments: names)
    func pendingFirst(name: String) {
        var machine = Machine(peer: Fixture.peer)
        let first = Fixture.record(3, 1)
        _ = machine.receive(.records(live: false, [first.bytes]), now: now)
        _ = machine.verified([first], delivery: .catchUp, bytes: 32)
        let actions = machine.receive(Self.message(name), now: now)
        if Self.message(name).isRecords {
            #expect(actions == Self.expected(name), "records join the pending batch")
        } else {
            #expect(actions == [.store(Self.batch(.catchUp, first))])
            let after = machine.stored(StoreOutcome(stored: 1, clock: VectorClock([first.ref.author: 1])))
            #expect(Array(after.suffix(Self.expected(name).count)) == Self.expected(name))
        }
    }

    @Test("closed: every message is ignored", arguments: names)
    func closed(name: String) {
        var machine = Machine(peer: Fixture.peer)
        machine.close()
        #expect(machine.receive(Self.message(name), now: now) == [])
        #expect(machine.phase == .closed)
    }

    @Test("over budget: every message that costs work is refused with ERROR over budget", arguments: names)
    func overBudget(name: String) {
        var configuration = Machine.Configuration()
        configuration.budget = PeerBudget.Limits(rate: 0, burst: 0, maxDebt: 0)
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let actions = machine.receive(Self.message(name), now: now)
        if name == "HELLO" || name == "ERROR" {
            // Free: HELLO is refused for what it is, an ERROR ends the session.
            #expect(actions == Self.expected(name))
        } else {
            #expect(actions.count == 1)
            #expect(actions.first?.closeCode == .overBudget, "\(actions)")
        }
        #expect(machine.phase == .closed)
    }

    static func batch(_ delivery: Delivery, _ records: TestRecord...) -> StoreBatch<TestRecord> {
        StoreBatch(parts: [.init(delivery: delivery, records: records)])
    }
}

extension WireMessage {
    var isRecords: Bool {
        switch self {
        case .records, .push: true
        default: false
        }
    }
}
