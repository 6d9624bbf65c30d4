import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// The intake of the session rules: how the peer's records go from a verification to a store, which messages wait
/// for them, and what happens when a store or a verification fails. The expected actions are written out by hand.
@Suite("Session machine: the intake of records")
struct IntakeTests {
    private let now = ContinuousClock.now
    private static let a = Fixture.record(3, 1)
    private static let b = Fixture.record(3, 2)
    private static let c = Fixture.record(3, 3)
    private static let author = Fixture.author(3)

    private static func part(_ delivery: Delivery, _ record: TestRecord) -> StoreBatch<TestRecord>.Part {
        .init(delivery: delivery, records: [record])
    }

    /// The ACK of a batch after which this node holds author 3's records up to `head`.
    private static func ack(_ head: UInt64) -> Machine.Action { .send(.ack(VectorClock([author: head]))) }

    private static func stored(_ count: Int, head: UInt64) -> StoreOutcome {
        StoreOutcome(stored: count, clock: VectorClock([author: head]))
    }

    @Test("a RECORDS frame that comes while a batch is stored is verified beside it; a PING behind it waits for both")
    func framesVerifiedBesideTheStore() {
        var machine = Machine(peer: Fixture.peer)
        #expect(machine.receive(.records(live: true, [Self.a.bytes]), now: now) == [.verify([Self.a.bytes], .live)])
        #expect(
            machine.verified([Self.a], delivery: .live, bytes: 32)
                == [.store(StoreBatch(parts: [Self.part(.live, Self.a)]))]
        )
        #expect(machine.readsBesideStore)
        #expect(
            machine.receive(.records(live: true, [Self.b.bytes]), now: now) == [.verify([Self.b.bytes], .live)],
            "verified while the first frame is stored"
        )
        #expect(machine.verifying)
        #expect(machine.receive(.ping(1), now: now) == [], "held back behind the frame")
        #expect(machine.verified([Self.b], delivery: .live, bytes: 32) == [], "a store is under way: the frame waits")
        #expect(machine.isBusy)
        #expect(!machine.readsBesideStore, "the PING waits: nothing may overtake it")
        #expect(
            machine.stored(Self.stored(1, head: 1))
                == [Self.ack(1), .storedFromPeer(1), .store(StoreBatch(parts: [Self.part(.live, Self.b)]))]
        )
        // The PING waits for the frame's store too.
        #expect(machine.stored(Self.stored(1, head: 2)) == [Self.ack(2), .storedFromPeer(1), .send(.pong(1))])
        #expect(!machine.isBusy)
    }

    @Test(
        "beside a store, readAheadRecords at most wait verified; the next frame waits, then goes beside the next store"
    )
    func besideTheStoreBounded() {
        var configuration = Machine.Configuration()
        configuration.flushRecords = 2
        configuration.readAheadRecords = 2
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let d = Fixture.record(3, 4)
        #expect(machine.receive(.records(live: true, [Self.a.bytes]), now: now) == [.verify([Self.a.bytes], .live)])
        #expect(
            machine.verified([Self.a], delivery: .live, bytes: 32)
                == [.store(StoreBatch(parts: [Self.part(.live, Self.a)]))]
        )
        #expect(machine.receive(.records(live: false, [Self.b.bytes]), now: now) == [.verify([Self.b.bytes], .catchUp)])
        #expect(machine.verified([Self.b], delivery: .catchUp, bytes: 32) == [.scheduleFlush(generation: 1)])
        #expect(machine.readsBesideStore, "one record waits: below the batch")
        #expect(machine.receive(.records(live: false, [Self.c.bytes]), now: now) == [.verify([Self.c.bytes], .catchUp)])
        #expect(machine.verified([Self.c], delivery: .catchUp, bytes: 32) == [], "a batch waits for the store")
        #expect(!machine.readsBesideStore, "a whole batch waits verified: no more is read")
        #expect(machine.receive(.records(live: false, [d.bytes]), now: now) == [], "held back")
        #expect(machine.flushTimerFired(1) == [], "a store is under way")
        // The store returns: the waiting batch is stored at once, and the frame held is verified beside it.
        #expect(
            machine.stored(Self.stored(1, head: 1))
                == [
                    Self.ack(1), .storedFromPeer(1),
                    .store(StoreBatch(parts: [Self.part(.catchUp, Self.b), Self.part(.catchUp, Self.c)])),
                    .verify([d.bytes], .catchUp),
                ]
        )
        #expect(machine.verified([d], delivery: .catchUp, bytes: 32) == [.scheduleFlush(generation: 2)])
        #expect(
            machine.stored(Self.stored(2, head: 3))
                == [Self.ack(3), Self.ack(3), .storedFromPeer(2), .store(StoreBatch(parts: [Self.part(.catchUp, d)]))]
        )
    }

    @Test("a frame verified while a batch is stored waits: the message held behind it starts its store")
    func verifiedWhileStoringThenHeldMessage() {
        var machine = Self.storingWhileVerifying()
        #expect(machine.receive(.ping(1), now: now) == [], "held back while verifying and storing")
        #expect(machine.verified([Self.b], delivery: .live, bytes: 32) == [], "a store is under way: the frame waits")
        #expect(machine.isBusy)
        #expect(
            machine.stored(Self.stored(1, head: 1))
                == [Self.ack(1), .storedFromPeer(1), .store(StoreBatch(parts: [Self.part(.live, Self.b)]))]
        )
        #expect(machine.stored(Self.stored(1, head: 2)) == [Self.ack(2), .storedFromPeer(1), .send(.pong(1))])
        #expect(!machine.isBusy)
    }

    @Test("a frame verified while a batch is stored, with nothing held: stored as soon as that store is done")
    func verifiedWhileStoringThenNothing() {
        var machine = Self.storingWhileVerifying()
        #expect(machine.verified([Self.b], delivery: .live, bytes: 32) == [])
        // Nothing else comes from the peer: the live frame must not wait for its next message.
        #expect(
            machine.stored(Self.stored(1, head: 1))
                == [Self.ack(1), .storedFromPeer(1), .store(StoreBatch(parts: [Self.part(.live, Self.b)]))]
        )
        #expect(machine.isBusy)
        // A PING meanwhile waits for that store, and is answered after its ACK.
        #expect(machine.receive(.ping(1), now: now) == [])
        #expect(machine.stored(Self.stored(1, head: 2)) == [Self.ack(2), .storedFromPeer(1), .send(.pong(1))])
        #expect(!machine.isBusy)
    }

    /// A machine storing catch-up record `a` (its flush timer fired) while live record `b` is verified.
    private static func storingWhileVerifying() -> Machine {
        var machine = Machine(peer: Fixture.peer)
        let now = ContinuousClock.now
        #expect(machine.receive(.records(live: false, [a.bytes]), now: now) == [.verify([a.bytes], .catchUp)])
        #expect(machine.verified([a], delivery: .catchUp, bytes: 32) == [.scheduleFlush(generation: 1)])
        #expect(!machine.isBusy, "a catch-up record is pending, nothing is under way")
        #expect(machine.receive(.records(live: true, [b.bytes]), now: now) == [.verify([b.bytes], .live)])
        #expect(machine.flushTimerFired(1) == [.store(StoreBatch(parts: [part(.catchUp, a)]))])
        #expect(machine.verifying)
        return machine
    }

    @Test("a store fails: the session ends, what waited is dropped, a late answer is ignored")
    func storeFails() {
        var machine = Machine(peer: Fixture.peer)
        _ = machine.receive(.records(live: true, [Self.a.bytes]), now: now)
        #expect(
            machine.verified([Self.a], delivery: .live, bytes: 32)
                == [.store(StoreBatch(parts: [Self.part(.live, Self.a)]))]
        )
        #expect(machine.receive(.ping(1), now: now) == [])
        #expect(machine.receive(.records(live: true, [Self.b.bytes]), now: now) == [])
        #expect(
            machine.storeFailed() == [.close(WireError(.internal, "the receiving node could not store the records"))]
        )
        #expect(machine.phase == .closed)
        #expect(!machine.isBusy)
        #expect(machine.stored(Self.stored(1, head: 1)) == [])
        #expect(machine.receive(.ping(2), now: now) == [])
    }

    @Test("a store fails while a frame is verified: the session ends, and stays busy until the verification returns")
    func storeFailsWhileVerifying() {
        var machine = Self.storingWhileVerifying()
        #expect(machine.receive(.ping(1), now: now) == [])
        #expect(
            machine.storeFailed() == [.close(WireError(.internal, "the receiving node could not store the records"))]
        )
        #expect(machine.phase == .closed)
        #expect(machine.isBusy, "the verification under way is still awaited")
        #expect(machine.verifying)
        #expect(machine.verified([Self.b], delivery: .live, bytes: 32) == [])
        #expect(!machine.isBusy)
    }

    @Test("a verification fails: the session ends, and the messages that waited are never acted on")
    func verificationFails() {
        var machine = Machine(peer: Fixture.peer)
        _ = machine.receive(.records(live: true, [Self.a.bytes]), now: now)
        #expect(machine.receive(.ping(1), now: now) == [])
        #expect(
            machine.verificationFailed("bad signature") == [
                .close(WireError(.badRecord, "invalid record: bad signature"))
            ]
        )
        #expect(machine.phase == .closed)
        #expect(!machine.isBusy)
        #expect(machine.stored(Self.stored(1, head: 1)) == [])
    }

    @Test("a partial batch: only the last flush timer stores it, every RECORDS frame of it is acknowledged")
    func partialBatchFlush() {
        var machine = Machine(peer: Fixture.peer)
        for (record, generation) in [(Self.a, 1), (Self.b, 2)] {
            _ = machine.receive(.records(live: false, [record.bytes]), now: now)
            #expect(
                machine.verified([record], delivery: .catchUp, bytes: 32) == [.scheduleFlush(generation: generation)]
            )
        }
        #expect(machine.flushTimerFired(1) == [], "an earlier timer")
        let batch = StoreBatch(parts: [Self.part(.catchUp, Self.a), Self.part(.catchUp, Self.b)])
        #expect(machine.flushTimerFired(2) == [.store(batch)])
        #expect(machine.flushTimerFired(2) == [], "nothing pending")
        #expect(machine.stored(Self.stored(2, head: 2)) == [Self.ack(2), Self.ack(2), .storedFromPeer(2)])
        #expect(!machine.isBusy)
    }

    @Test("a partial batch reaches flushRecords: stored without a timer")
    func partialBatchFull() {
        var configuration = Machine.Configuration()
        configuration.flushRecords = 3
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        for (record, generation) in [(Self.a, 1), (Self.b, 2)] {
            _ = machine.receive(.records(live: false, [record.bytes]), now: now)
            #expect(
                machine.verified([record], delivery: .catchUp, bytes: 32) == [.scheduleFlush(generation: generation)]
            )
        }
        _ = machine.receive(.records(live: false, [Self.c.bytes]), now: now)
        let batch = StoreBatch(parts: [
            Self.part(.catchUp, Self.a), Self.part(.catchUp, Self.b), Self.part(.catchUp, Self.c),
        ])
        #expect(machine.verified([Self.c], delivery: .catchUp, bytes: 32) == [.store(batch)])
        #expect(machine.flushTimerFired(2) == [], "the timer finds nothing pending")
        #expect(machine.stored(Self.stored(3, head: 3)) == [Self.ack(3), Self.ack(3), Self.ack(3), .storedFromPeer(3)])
    }

    @Test("a push joins a pending batch and stores it at once; only the RECORDS frame is acknowledged")
    func pushJoinsPendingBatch() {
        var machine = Machine(peer: Fixture.peer)
        _ = machine.receive(.records(live: false, [Self.a.bytes]), now: now)
        #expect(machine.verified([Self.a], delivery: .catchUp, bytes: 32) == [.scheduleFlush(generation: 1)])
        #expect(machine.receive(.push([Self.b.bytes]), now: now) == [.verify([Self.b.bytes], .push)])
        let batch = StoreBatch(parts: [Self.part(.catchUp, Self.a), Self.part(.push, Self.b)])
        #expect(machine.verified([Self.b], delivery: .push, bytes: 32) == [.store(batch)])
        #expect(machine.flushTimerFired(1) == [], "the timer finds nothing pending")
        #expect(machine.stored(Self.stored(2, head: 2)) == [Self.ack(2), .storedFromPeer(2)])
    }
}
