// libFuzzer target `session`: the session state machine (ContinuumSession's SessionMachine) fed a random peer's
// messages, with its executor's answers and this node's own events (rounds, gossip, pushes, interest, timers,
// stores finishing early or late) chosen by the input too. Built and run by scripts/fuzz.sh; Docs/FUZZING.md.
//
// Input: one byte n, then n control bytes (the executor's choices, used in a cycle), then a byte stream decoded
// by FrameDecoder into the peer's messages, as the NIO handler decodes it. A refusal (ERROR, close) is expected.
// A bug is a crash, a trap, an AddressSanitizer report, or one of these checks failing:
// - every message the machine sends passes WireCodec.validate and decodes back to itself from its encoding;
// - nothing is asked of the executor after the session has ended, and a closed machine answers nothing;
// - RECORDS frames in flight never exceed the window; the queues never exceed their bounds;
// - once every store, verification and timer has finished, the machine is idle or closed (nothing left waiting).

import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

/// When set, the frame stream must decode whole: scripts/fuzz.sh checks the seed corpus this way.
let expectValid = getenv("CONTINUUM_FUZZ_EXPECT_VALID") != nil

typealias Machine = SessionMachine<VerifiedRecord>

func fail(_ what: String) -> Never { fatalError("session: \(what)") }

/// A simulated executor around one machine: an in-memory store of verified records, timers, a stream worker.
struct Executor {
    var machine: Machine
    let controls: [UInt8]
    var next = 0
    var held: [AuthorID: [UInt64: VerifiedRecord]] = [:]
    var storing: StoreBatch<VerifiedRecord>?
    var timers: [Int] = []
    var ended = false
    var now = ContinuousClock.now
    var version: UInt64 = 0

    init(controls: [UInt8]) {
        self.controls = controls
        var configuration = Machine.Configuration()
        configuration.window = 3
        configuration.flushRecords = 4
        configuration.maxQueuedStreams = 4
        configuration.maxQueuedServes = 4
        configuration.maxServers = 2
        machine = Machine(peer: AuthorID(unchecked: Data(repeating: 0xEE, count: 32)), configuration: configuration)
    }

    mutating func control() -> UInt8 {
        guard !controls.isEmpty else { return 0 }
        defer { next += 1 }
        return controls[next % controls.count]
    }

    var clock: VectorClock {
        VectorClock(
            held.compactMapValues { log in
                var head: UInt64 = 0
                while log[head + 1] != nil { head += 1 }
                return head == 0 ? nil : head
            }
        )
    }

    var outgoing: [OutgoingRecord] {
        held.values.flatMap(\.values).sorted { $0.id < $1.id }.map { OutgoingRecord($0.ref, bytes: $0.bytes) }
    }

    // MARK: Performing

    mutating func perform(_ actions: [Machine.Action]) {
        var queue = actions[...]
        while let action = queue.popFirst() {
            if ended { fail("\(action) asked for after the session ended") }
            queue = perform(action)[...] + queue
            check()
        }
    }

    mutating func perform(_ action: Machine.Action) -> [Machine.Action] {
        switch action {
        case .send(let message): checkSent(message)
        case .sendUrgent(let messages): messages.forEach(checkSent)
        case .verify(let batch, let delivery):
            var records: [VerifiedRecord] = []
            for bytes in batch {
                do throws(RecordError) {
                    records.append(try SignedRecord(bytes: bytes).verify())
                } catch {
                    return machine.verificationFailed("\(error)")
                }
            }
            return machine.verified(records, delivery: delivery, bytes: batch.reduce(0) { $0 + $1.count })
        case .store(let batch):
            if storing != nil { fail("a second store while one is under way") }
            storing = batch
            if control() & 1 == 0 { return finishStore() }
        case .scheduleFlush(let generation): timers.append(generation)
        case .checkGaps: return machine.checkGaps(ourClock: clock)
        // The repair delay of tree push (a HAVE) has passed, at once.
        case .scheduleRepair: return machine.repair(ourClock: clock, now: .now + .seconds(1))
        case .startStreaming: return runStreams()
        case .startServer: while machine.nextServeJob() != nil {}
        case .close, .peerRefused:
            ended = true
            if machine.phase != .closed { fail("\(action) while the machine is open") }
        case .rememberClock, .peerClockKnown, .roundFinished, .progress, .storedFromPeer, .interest, .follows, .photo,
            .windowOpened:
            break
        }
        return []
    }

    mutating func finishStore() -> [Machine.Action] {
        guard let batch = storing else { return [] }
        storing = nil
        var stored = 0
        for record in batch.records where held[record.ref.author]?[record.ref.sequence] == nil {
            held[record.ref.author, default: [:]][record.ref.sequence] = record
            stored += 1
        }
        if control() % 7 == 0 { return machine.storeFailed() }
        return machine.stored(StoreOutcome(stored: stored, clock: clock))
    }

    /// The stream worker, run to the end of its queue; what the window does not let through is left out.
    mutating func runStreams() -> [Machine.Action] {
        while let job = machine.nextStreamJob() {
            var ranges: [LogRange]
            switch job {
            case .request(let requested): ranges = requested
            case .catchUp: ranges = machine.catchUpRanges(ours: clock)
            case .round(let number, let theirs):
                if case .ranges(let planned) = machine.plan(round: number, theirs: theirs, ours: clock) {
                    ranges = planned
                } else {
                    ranges = []
                }
            }
            for range in ranges.prefix(8) where machine.windowOpen {
                let log = held[range.author] ?? [:]
                let records = log.filter { range.range.contains($0.key) }.sorted { $0.key < $1.key }.prefix(5)
                if let frame = machine.recordsFrame(
                    records.map { OutgoingRecord($0.value.ref, bytes: $0.value.bytes) },
                    live: false
                ) {
                    checkSent(frame)
                }
            }
        }
        return []
    }

    // MARK: This node's own events

    mutating func localEvent() {
        guard !ended else { return }
        switch control() % 8 {
        case 0:
            if let (_, actions) = machine.startRound(ourClock: clock) { perform(actions) }
        case 1: perform(machine.gossip(outgoing, backlog: Int(control()), highWater: 128))
        case 2: perform(machine.push(outgoing))
        case 3:
            version += 1
            let wanted = Dictionary(
                (0..<Int(control() % 5)).map {
                    (PostID(unchecked: Data(repeating: UInt8($0), count: 32)), control() % 9)
                }
            ) { first, _ in first }
            perform(machine.advertise(wanted, version: version))
        case 4:
            if !timers.isEmpty { perform(machine.flushTimerFired(timers.removeFirst())) }
        case 5: perform(finishStore())
        default: break
        }
    }

    /// Everything under way finishes: the machine must then be idle, or closed.
    mutating func settle() {
        var rounds = 0
        while !ended, storing != nil || !timers.isEmpty {
            rounds += 1
            if rounds > 10_000 { fail("stores and timers never settle") }
            perform(finishStore())
            if !timers.isEmpty { perform(machine.flushTimerFired(timers.removeFirst())) }
        }
        if !ended, machine.isBusy { fail("busy with nothing under way") }
    }

    // MARK: Checks

    func checkSent(_ message: WireMessage) {
        do throws(WireError) {
            try WireCodec.validate(message)
            var decoder = FrameDecoder()
            decoder.append(WireCodec.encode(message)[...])
            guard try decoder.next() == message else { fail("\(message.typeName) does not decode back to itself") }
        } catch {
            fail("sent \(message.typeName) that the codec refuses: \(error)")
        }
    }

    func check() {
        if machine.inflight > machine.configuration.window { fail("\(machine.inflight) RECORDS frames in flight") }
    }
}

func run(_ input: [UInt8]) {
    let count = Int(input.first ?? 0)
    let controls = Array(input.dropFirst().prefix(count))
    let stream = input.dropFirst(1 + count)
    var executor = Executor(controls: controls)
    var decoder = FrameDecoder()
    decoder.append(stream)
    while true {
        let message: WireMessage
        do throws(WireError) {
            guard let next = try decoder.next() else {
                if expectValid, decoder.bufferedBytes > 0 { fail("seed ends inside a frame") }
                break
            }
            message = next
        } catch {
            if expectValid { fail("seed does not decode: \(error)") }
            break
        }
        executor.now += .milliseconds(Int(executor.control() % 16))
        let actions = executor.machine.receive(message, now: executor.now)
        if executor.ended, !actions.isEmpty { fail("a closed session answered \(message.typeName)") }
        executor.perform(actions)
        executor.localEvent()
    }
    executor.settle()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSession(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    run(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}
