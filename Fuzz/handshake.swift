// libFuzzer target `handshake`: the connection handshake (ContinuumSession's HandshakeMachine, PROTOCOL.md §7.8.3)
// fed a random peer's frames, with the engine's answers (the HELLO check, our MEMBERSHIP, admission, a JOINED's
// check and record, a link's consent, add and record) and the connection's other events (a decode error, the stream's end, a broken transport, the
// node stopping) chosen by the input too. Built and run by scripts/fuzz.sh; Docs/FUZZING.md.
//
// Input: one byte n, then n control bytes (the executor's choices, used in a cycle; the first one also chooses
// whether this side joins by invite, asks to join, links, or neither), then a byte stream decoded by FrameDecoder into the
// peer's messages, as the NIO handler decodes it. A refusal (ERROR, close) is expected. A bug is a crash, a trap
// (the machine's preconditions included), an AddressSanitizer report, or one of these checks failing:
// - every message the machine sends, and every ERROR it refuses with, passes WireCodec.validate and decodes back to
//   itself from its encoding;
// - nothing comes after the handshake has ended (a refusal, a close, the session): no send, no question, no second
//   end; in particular at most one established, and only with a group shared;
// - after its actions are performed, the machine has ended or waits for a frame (it never waits for nothing);
// - the stream's end always ends the handshake.

import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

/// When set, the frame stream must decode whole: scripts/fuzz.sh checks the seed corpus this way.
let expectValid = getenv("CONTINUUM_FUZZ_EXPECT_VALID") != nil

func fail(_ what: String) -> Never { fatalError("handshake: \(what)") }

/// The group shared or joined; made anew each time, as a global holding allocated bytes would read as a leak to
/// libFuzzer's leak check (allocated during the first input, never freed).
var group: GroupID { GroupID(unchecked: Data(repeating: 0x33, count: 32)) }

/// A simulated executor around one machine: it answers every question of the machine from the control bytes.
struct Executor {
    var machine: HandshakeMachine
    let controls: [UInt8]
    var next = 0
    var ended = false

    init(controls: [UInt8]) {
        self.controls = controls
        let ours = Hello(
            nonce: SessionNonce(bytes: [UInt8](repeating: 1, count: 32))!,
            node: AuthorID(unchecked: Data(repeating: 0x22, count: 32)),
            name: "fuzz",
            plaintext: true
        )
        let log = AuthorID(unchecked: Data(repeating: 0x44, count: 32))
        let join: HandshakeJoin? =
            switch (controls.first ?? 0) % 5 {
            case 1: .invite(nodePrefix: [UInt8](repeating: 0x11, count: 8), log: log)
            case 2: .request(log: log)
            case 3: .invite(nodePrefix: [UInt8](repeating: 0x12, count: 8), log: log)
            case 4 where (controls.first ?? 0) & 0x80 != 0: .recover
            case 4: .link(nodePrefix: [UInt8](repeating: 0x11, count: 8))
            default: nil
            }
        machine = HandshakeMachine(ours: ours, host: "127.0.0.1", join: join)
    }

    mutating func control() -> UInt8 {
        guard !controls.isEmpty else { return 0 }
        defer { next += 1 }
        return controls[next % controls.count]
    }

    // MARK: Performing

    mutating func perform(_ actions: [HandshakeAction]) {
        var queue = actions[...]
        while let action = queue.popFirst() {
            if ended { fail("\(action) asked for after the handshake ended") }
            queue = perform(action)[...] + queue
        }
        if !ended, !machine.awaitsFrame { fail("the machine waits for nothing") }
        if ended != machine.isFinished { fail("ended: \(ended), but the machine says \(machine.isFinished)") }
    }

    mutating func perform(_ action: HandshakeAction) -> [HandshakeAction] {
        switch action {
        case .send(let message): checkSent(message)
        case .refuse(let error, _):
            checkSent(.error(error))
            ended = true
        case .close: ended = true
        case .established(let outcome):
            if outcome.groups.isEmpty { fail("established with no group shared") }
            ended = true
        case .checkHello:
            return switch control() % 8 {
            case 0:
                machine.helloChecked(.refused(WireError(.selfConnection, "the peer claims this node's own identity")))
            case 1: machine.helloChecked(.noEd25519Certificate)
            case 2: machine.helloChecked(.certificateUnreadable("broken"))
            default: machine.helloChecked(.passed)
            }
        case .prepareMembership:
            if control() % 16 == 0 { return failure() }
            return machine.membershipPrepared(Membership(networkTags: [[UInt8](repeating: 5, count: 16)]))
        case .admit: return admit()
        case .checkJoined:
            if control() % 16 == 0 { return failure() }
            return machine.joinedChecked(alreadyMember: control() % 4 == 0)
        case .recordJoin:
            if control() % 8 == 0 { return failure() }
            return machine.joinRecorded()
        case .consentTo:
            if control() % 8 == 0 { return machine.consentSigned(.failure(WireError(.badRecord, "no founding"))) }
            return machine.consentSigned(.success([UInt8](repeating: 6, count: 64)))
        case .signLink:
            if control() % 8 == 0 { return machine.linkSigned(.failure(WireError(.inviteRefused, "used"))) }
            let groups = control() % 4 == 0 ? [] : [group]
            return machine.linkSigned(.success(LinkedAccount(record: [UInt8](repeating: 7, count: 40), groups: groups)))
        case .recordLink(let linked):
            if control() % 8 == 0 { return machine.linkRecorded(.failure(WireError(.badRecord, "not this device"))) }
            return machine.linkRecorded(.success(Set(linked.groups)))
        case .recoverAccount:
            if control() % 8 == 0 { return machine.recoverySigned(.failure(WireError(.inviteRefused, "no account"))) }
            let groups: Set<GroupID> = control() % 4 == 0 ? [] : [group]
            return machine.recoverySigned(
                .success(RecoveredAccount(records: [[UInt8](repeating: 9, count: 40)], groups: groups))
            )
        case .takeRecovery:
            if control() % 8 == 0 { return machine.recoveryTaken(.failure(WireError(.notMember, "adds nobody"))) }
            return machine.recoveryTaken(.success(control() % 4 == 0 ? [] : [group]))
        case .shareWithExistingSession, .reportJoin, .rememberRefusal, .rememberStranger: break
        }
        return []
    }

    mutating func admit() -> [HandshakeAction] {
        let choice = control()
        if choice % 8 == 0 {
            return machine.admitted(
                .failure(WireError(.inviteRefused, "this invite was already used; ask for a new one"))
            )
        }
        if choice % 8 == 1 { return failure() }
        var admission = HandshakeAdmission(problem: choice & 0x10 == 0 ? nil : "you were removed from group Family")
        if choice & 0x20 != 0 { admission.groups.insert(group) }
        if choice & 0x40 != 0 { admission.joined = JoinedGroup(group: group, record: [UInt8](repeating: 7, count: 40)) }
        if choice & 0x80 != 0 { admission.nodeInNoGroup = admission.groups.isEmpty }
        if choice % 8 == 7 { admission.linking = [[UInt8](repeating: 8, count: 40)] }
        if choice % 8 == 6 {
            admission.linking = [[UInt8](repeating: 8, count: 40)]
            admission.recovering = true
        }
        return machine.admitted(.success(admission))
    }

    mutating func failure() -> [HandshakeAction] {
        machine.engineFailed(WireError(.internal, "the node failed while reading its groups"), reason: "disk")
    }

    /// An event of the connection other than a frame, now and then.
    mutating func connectionEvent() {
        guard !ended else { return }
        switch control() % 32 {
        case 0: perform(machine.decodeFailed(WireError(.malformedFrame, "MEMBERSHIP: 33 claims; the limit is 32")))
        case 1: perform(machine.transportFailed("TLS handshake failed"))
        case 2: perform(machine.stopping())
        default: break
        }
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
}

func run(_ input: [UInt8]) {
    let count = Int(input.first ?? 0)
    let controls = Array(input.dropFirst().prefix(count))
    let stream = input.dropFirst(1 + count)
    var executor = Executor(controls: controls)
    executor.perform(executor.machine.start())
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
            let actions = executor.machine.decodeFailed(error)
            if executor.ended, !actions.isEmpty { fail("an ended handshake answered a decode error") }
            executor.perform(actions)
            break
        }
        let actions = executor.machine.receive(message)
        if executor.ended, !actions.isEmpty { fail("an ended handshake answered \(message.typeName)") }
        executor.perform(actions)
        executor.connectionEvent()
    }
    let actions = executor.machine.streamEnded()
    if executor.ended, !actions.isEmpty { fail("an ended handshake answered the stream's end") }
    executor.perform(actions)
    if !executor.ended { fail("the stream ended and the handshake goes on") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    run(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}
