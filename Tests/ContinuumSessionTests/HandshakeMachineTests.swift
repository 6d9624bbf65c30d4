import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// The handshake machine (PROTOCOL.md §7.8.3) phase by phase, with no sockets and no engine: every expected action,
/// ERROR and reason is written out by hand from the protocol.
@Suite("Handshake machine: each phase, each refusal an ERROR")
struct HandshakeMachineTests {
    private static let me = NodeIdentity.generate()
    private static let log = NodeIdentity.generate()
    private static let group = GroupID(unchecked: Data(repeating: 0x33, count: 32))

    private static let ours = Hello(
        nonce: SessionNonce(bytes: [UInt8](repeating: 1, count: 32))!,
        node: me.author,
        name: "me",
        listenPort: 7411,
        plaintext: true
    )
    private static let theirs = Hello(
        nonce: SessionNonce(bytes: [UInt8](repeating: 7, count: 32))!,
        node: AuthorID(unchecked: Data(repeating: 0x11, count: 32)),
        name: "peer",
        listenPort: 7420,
        plaintext: true
    )
    private static let meeting = HandshakeMeeting(theirs: theirs, ours: ours, host: "127.0.0.1")
    private static let peerMembership = Membership(claims: [Membership.Claim(group: group, proof: [1, 2, 3])])
    private static let ourMembership = Membership(networkTags: [[UInt8](repeating: 9, count: 16)])
    /// The code's node prefix of an invite made by the peer.
    private static let inviter = HandshakeJoin.invite(nodePrefix: [UInt8](repeating: 0x11, count: 8), log: log.author)

    /// A member record of `group`, signed by another node, that `action`s `node` with the joiner's new log.
    private static func memberRecord(_ node: NodeID, _ action: MemberAction = .add) throws -> [UInt8] {
        let admin = NodeIdentity.generate()
        return try admin.sign(
            RecordContent(
                author: admin.author,
                sequence: 1,
                previous: nil,
                createdAt: Timestamp(milliseconds: 1_700_000_000_000),
                body: .member(MemberChange(group: group, action: action, node: node, log: log.author))
            )
        ).bytes
    }

    /// A machine whose HELLOs have crossed and passed: it waits for our MEMBERSHIP to be made.
    private static func met(join: HandshakeJoin? = nil) -> HandshakeMachine {
        var machine = HandshakeMachine(ours: ours, host: "127.0.0.1", join: join)
        #expect(machine.start() == [.send(.hello(ours))])
        #expect(machine.receive(.hello(theirs)) == [.checkHello(theirs)])
        #expect(machine.helloChecked(.passed) == [.prepareMembership(meeting)])
        return machine
    }

    /// A machine that sent its MEMBERSHIP and received the peer's: it waits for the engine's admission.
    private static func admitting(join: HandshakeJoin? = nil) -> HandshakeMachine {
        var machine = met(join: join)
        #expect(machine.membershipPrepared(ourMembership) == [.send(.membership(ourMembership))])
        #expect(machine.receive(.membership(peerMembership)) == [.admit(meeting, peerMembership)])
        return machine
    }

    // MARK: Opening

    @Test("a valid opening: HELLO, the check, MEMBERSHIP both ways, admission, then the session")
    func opening() {
        var machine = Self.admitting()
        #expect(!machine.isFinished)
        let admitted = machine.admitted(.success(HandshakeAdmission(groups: [Self.group])))
        #expect(
            admitted == [.established(HandshakeOutcome(meeting: Self.meeting, groups: [Self.group], joined: false))]
        )
        #expect(machine.isFinished)
        // Established: what follows is the session's, and the machine says nothing more.
        #expect(machine.receive(.ping(1)) == [])
        #expect(machine.streamEnded() == [])
        #expect(machine.stopping() == [])
    }

    @Test("two machines, each the other's peer, open a session both ways")
    func bothWays() {
        let a = Hello(nonce: SessionNonce(bytes: [UInt8](repeating: 2, count: 32))!, node: Self.theirs.node)
        let b = Hello(nonce: SessionNonce(bytes: [UInt8](repeating: 3, count: 32))!, node: Self.me.author)
        var dialler = HandshakeMachine(ours: a, host: "b.example")
        var listener = HandshakeMachine(ours: b, host: "a.example")
        // Each machine's frames go to the other; engine questions are answered as a node sharing the group would.
        var toListener = dialler.start()
        var toDialler = listener.start()
        var outcomes: [HandshakeOutcome] = []
        func answer(_ actions: [HandshakeAction], _ machine: inout HandshakeMachine, _ out: inout [WireMessage]) {
            for action in actions {
                switch action {
                case .send(let message): out.append(message)
                case .checkHello: answer(machine.helloChecked(.passed), &machine, &out)
                case .prepareMembership: answer(machine.membershipPrepared(Membership()), &machine, &out)
                case .admit:
                    answer(machine.admitted(.success(HandshakeAdmission(groups: [Self.group]))), &machine, &out)
                case .established(let outcome): outcomes.append(outcome)
                default: Issue.record("unexpected \(action)")
                }
            }
        }
        var toL: [WireMessage] = []
        var toD: [WireMessage] = []
        answer(toListener, &dialler, &toL)
        answer(toDialler, &listener, &toD)
        for _ in 0..<4 {
            toListener = toL.flatMap { listener.receive($0) }
            toDialler = toD.flatMap { dialler.receive($0) }
            toL = []
            toD = []
            answer(toListener, &listener, &toD)
            answer(toDialler, &dialler, &toL)
        }
        #expect(
            Set(outcomes) == [
                HandshakeOutcome(
                    meeting: HandshakeMeeting(theirs: b, ours: a, host: "b.example"),
                    groups: [Self.group],
                    joined: false
                ),
                HandshakeOutcome(
                    meeting: HandshakeMeeting(theirs: a, ours: b, host: "a.example"),
                    groups: [Self.group],
                    joined: false
                ),
            ]
        )
        #expect(dialler.isFinished && listener.isFinished)
    }

    // MARK: Wrong frames and the peer's ERROR

    @Test("a first frame that is not HELLO is refused with unexpected message; then the machine is silent")
    func wrongFirstFrame() {
        var machine = HandshakeMachine(ours: Self.ours, host: "127.0.0.1")
        _ = machine.start()
        #expect(
            machine.receive(.ping(5)) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected HELLO"),
                    reason: "refused: the first frame was PING, not HELLO"
                )
            ]
        )
        #expect(machine.isFinished)
        #expect(machine.receive(.hello(Self.theirs)) == [])
    }

    @Test("an optional message is a session's: in the handshake, before or after the peer's HELLO, it is refused")
    func optionalMessages() {
        let optional = WireMessage.optional(type: 0xa0, payload: [1])
        var first = HandshakeMachine(ours: Self.ours, host: "127.0.0.1")
        _ = first.start()
        #expect(
            first.receive(optional) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected HELLO"),
                    reason: "refused: the first frame was optional 0xa0, not HELLO"
                )
            ]
        )
        // No budget charges the handshake's frames: a peer may not stream them while its MEMBERSHIP is awaited.
        var machine = Self.met()
        #expect(machine.membershipPrepared(Self.ourMembership) == [.send(.membership(Self.ourMembership))])
        #expect(
            machine.receive(optional) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected MEMBERSHIP"),
                    reason: "refused: the frame after HELLO was optional 0xa0, not MEMBERSHIP"
                )
            ]
        )
        #expect(machine.isFinished)
    }

    @Test("a frame after HELLO that is not MEMBERSHIP is refused, naming MEMBERSHIP")
    func wrongSecondFrame() {
        var machine = Self.met()
        _ = machine.membershipPrepared(Self.ourMembership)
        #expect(
            machine.receive(.hello(Self.theirs)) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected MEMBERSHIP"),
                    reason: "refused: the frame after HELLO was HELLO, not MEMBERSHIP"
                )
            ]
        )
    }

    @Test("the peer's ERROR ends the handshake unanswered; once the HELLOs met it is remembered")
    func peerError() {
        let error = WireError(.wrongNetwork, "elsewhere")
        var first = HandshakeMachine(ours: Self.ours, host: "127.0.0.1")
        _ = first.start()
        #expect(first.receive(.error(error)) == [.close(reason: "the peer refused: wrong network: elsewhere")])

        var second = Self.met()
        _ = second.membershipPrepared(Self.ourMembership)
        #expect(
            second.receive(.error(error)) == [
                .rememberRefusal(Self.meeting, error), .close(reason: "the peer refused: wrong network: elsewhere"),
            ]
        )
    }

    @Test("a MEMBERSHIP the decoder refused is answered with its ERROR, malformed frame")
    func malformedMembership() {
        var machine = Self.met()
        _ = machine.membershipPrepared(Self.ourMembership)
        let error = WireError(.malformedFrame, "MEMBERSHIP: join flag is 5; it must be 0 ... 4")
        #expect(
            machine.decodeFailed(error) == [
                .refuse(
                    error,
                    reason: "handshake failed: malformed frame: MEMBERSHIP: join flag is 5; it must be 0 ... 4"
                )
            ]
        )
    }

    @Test("a closed stream and a broken TLS layer send nothing; a stopping node says so")
    func silentEnds() {
        var closed = Self.met()
        _ = closed.membershipPrepared(Self.ourMembership)
        #expect(
            closed.streamEnded() == [
                .close(reason: "closed during the handshake (no MEMBERSHIP within the time limit)")
            ]
        )

        var broken = HandshakeMachine(ours: Self.ours, host: "127.0.0.1")
        _ = broken.start()
        #expect(
            broken.transportFailed("TLS handshake failed") == [.close(reason: "handshake failed: TLS handshake failed")]
        )

        var stopping = HandshakeMachine(ours: Self.ours, host: "127.0.0.1")
        _ = stopping.start()
        #expect(
            stopping.stopping() == [
                .refuse(WireError(.shuttingDown, "the node is shutting down"), reason: "this node is shutting down")
            ]
        )
    }

    // MARK: HELLO checks and admission

    @Test("a HELLO that fails a check is refused with the engine's ERROR; a certificate without a key likewise")
    func helloRefused() {
        let error = WireError(.selfConnection, "the peer claims this node's own identity")
        var machine = HandshakeMachine(ours: Self.ours, host: "127.0.0.1")
        _ = machine.start()
        _ = machine.receive(.hello(Self.theirs))
        #expect(
            machine.helloChecked(.refused(error)) == [
                .refuse(error, reason: "refused: the peer claims this node's own identity")
            ]
        )

        var keyless = HandshakeMachine(ours: Self.ours, host: "127.0.0.1")
        _ = keyless.start()
        _ = keyless.receive(.hello(Self.theirs))
        #expect(
            keyless.helloChecked(.noEd25519Certificate) == [
                .refuse(
                    WireError(
                        .identityMismatch,
                        "the peer's TLS certificate holds no Ed25519 key, so it cannot name the node in HELLO"
                    ),
                    reason: "refused: no Ed25519 certificate from the peer"
                )
            ]
        )
    }

    @Test("a peer sharing no group is refused: not a member, with the claim that failed, and remembered")
    func notMember() {
        var machine = Self.admitting()
        #expect(
            machine.admitted(.success(HandshakeAdmission(problem: "you were removed from group Family"))) == [
                .rememberStranger(Self.meeting),
                .refuse(
                    WireError(
                        .notMember,
                        "you are not a member of any group this node belongs to: ask a member for an invite code "
                            + "(continuum-node invite) and run 'continuum-node join CODE' (you were removed from group Family)"
                    ),
                    reason: "refused 111111111111: it shares no group with this node"
                ),
            ]
        )
    }

    @Test("a node in no group refuses the peer, then reports the peer's verdict when one comes")
    func nodeInNoGroup() {
        let refusal = WireError(.notMember, "this node belongs to no group yet, so it shares nothing")
        var verdict = Self.admitting()
        #expect(verdict.admitted(.success(HandshakeAdmission(nodeInNoGroup: true))) == [.send(.error(refusal))])
        let theirs = WireError(.notMember, "ask me")
        #expect(
            verdict.receive(.error(theirs)) == [
                .rememberRefusal(Self.meeting, theirs), .close(reason: "the peer refused: not a member: ask me"),
            ]
        )

        var none = Self.admitting()
        _ = none.admitted(.success(HandshakeAdmission(nodeInNoGroup: true)))
        #expect(
            none.streamEnded() == [
                .rememberStranger(Self.meeting),
                .close(reason: "refused 111111111111: it shares no group with this node"),
            ]
        )
    }

    @Test("an admission the engine refuses (a join refused) is that ERROR")
    func admissionRefused() {
        var machine = Self.admitting()
        let error = WireError(.inviteRefused, "this invite was already used; ask for a new one")
        #expect(
            machine.admitted(.failure(error)) == [
                .refuse(error, reason: "refused: this invite was already used; ask for a new one")
            ]
        )
    }

    // MARK: Joins

    @Test("the inviter's side: a join accepted is answered with JOINED, and the session keeps the group")
    func inviterSide() throws {
        let record = try Self.memberRecord(NodeID(unchecked: Self.theirs.node.bytes))
        var machine = Self.admitting()
        let admission = HandshakeAdmission(groups: [Self.group], joined: JoinedGroup(group: Self.group, record: record))
        #expect(
            machine.admitted(.success(admission)) == [
                .send(.joined(group: Self.group, record: record)),
                .shareWithExistingSession(peer: Self.theirs.node, group: Self.group),
                .established(HandshakeOutcome(meeting: Self.meeting, groups: [Self.group], joined: true)),
            ]
        )
    }

    @Test("a join by invite: JOINED checked, recorded, reported, and the group shared")
    func joinByInvite() throws {
        let joined = JoinedGroup(group: Self.group, record: try Self.memberRecord(Self.me.node))
        var machine = Self.admitting(join: Self.inviter)
        #expect(machine.admitted(.success(HandshakeAdmission())) == [])
        #expect(machine.receive(.joined(group: joined.group, record: joined.record)) == [.checkJoined(joined)])
        #expect(machine.joinedChecked(alreadyMember: false) == [.recordJoin(joined)])
        #expect(
            machine.joinRecorded() == [
                .shareWithExistingSession(peer: Self.theirs.node, group: Self.group),
                .reportJoin(.joined(Self.group)),
                .established(HandshakeOutcome(meeting: Self.meeting, groups: [Self.group], joined: true)),
            ]
        )
    }

    @Test("a join by invite refused: the wrong inviter, a JOINED for someone else, a group held already, no JOINED")
    func joinRefused() throws {
        var wrongNode = HandshakeMachine(
            ours: Self.ours,
            host: "127.0.0.1",
            join: .invite(nodePrefix: [UInt8](repeating: 0x12, count: 8), log: Self.log.author)
        )
        _ = wrongNode.start()
        _ = wrongNode.receive(.hello(Self.theirs))
        #expect(
            wrongNode.helloChecked(.passed) == [
                .refuse(
                    WireError(.inviteRefused, "this is not the node that made the invite"),
                    reason: "the node at 127.0.0.1 (111111111111) is not the one that made the invite"
                )
            ]
        )

        let notMine = JoinedGroup(
            group: Self.group,
            record: try Self.memberRecord(NodeID(unchecked: Self.theirs.node.bytes))
        )
        var wrongRecord = Self.admitting(join: Self.inviter)
        _ = wrongRecord.admitted(.success(HandshakeAdmission()))
        _ = wrongRecord.receive(.joined(group: notMine.group, record: notMine.record))
        #expect(
            wrongRecord.joinedChecked(alreadyMember: false) == [
                .refuse(
                    WireError(.badRecord, "the record in JOINED does not add this node to the group"),
                    reason: "refused the inviter's JOINED: the record in JOINED does not add this node to the group"
                )
            ]
        )

        let mine = JoinedGroup(group: Self.group, record: try Self.memberRecord(Self.me.node))
        var member = Self.admitting(join: Self.inviter)
        _ = member.admitted(.success(HandshakeAdmission()))
        _ = member.receive(.joined(group: mine.group, record: mine.record))
        #expect(
            member.joinedChecked(alreadyMember: true) == [
                .reportJoin(.failed("already a member of group 333333333333")),
                .refuse(
                    WireError(.inviteRefused, "this node is already in group 333333333333; it joins nothing"),
                    reason: "refused the inviter's JOINED: this node is already in group 333333333333; it joins nothing"
                ),
            ]
        )

        var noJoined = Self.admitting(join: Self.inviter)
        _ = noJoined.admitted(.success(HandshakeAdmission()))
        #expect(
            noJoined.receive(.ping(3)) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected JOINED"),
                    reason: "refused: the frame after MEMBERSHIP was PING, not JOINED"
                )
            ]
        )
    }

    @Test("a request to join: pending is reported and not remembered; denied is the peer's refusal; approved joins")
    func joinByRequest() throws {
        let request = HandshakeJoin.request(log: Self.log.author)
        let message = "your request to join is recorded; it waits for an admin of this node to approve it"
        var pending = Self.admitting(join: request)
        #expect(pending.admitted(.success(HandshakeAdmission())) == [])
        #expect(
            pending.receive(.error(WireError(.requestPending, message))) == [
                .reportJoin(.pending(message)), .close(reason: "the request to join waits for an admin: \(message)"),
            ]
        )

        let denied = WireError(.requestDenied, "an admin of this node denied your request to join")
        var refused = Self.admitting(join: request)
        _ = refused.admitted(.success(HandshakeAdmission()))
        #expect(
            refused.receive(.error(denied)) == [
                .rememberRefusal(Self.meeting, denied),
                .close(reason: "the peer refused: request denied: an admin of this node denied your request to join"),
            ]
        )

        let joined = JoinedGroup(group: Self.group, record: try Self.memberRecord(Self.me.node, .remove))
        var approved = Self.admitting(join: request)
        _ = approved.admitted(.success(HandshakeAdmission()))
        _ = approved.receive(.joined(group: joined.group, record: joined.record))
        #expect(
            approved.joinedChecked(alreadyMember: false) == [
                .refuse(
                    WireError(.badRecord, "the record in JOINED does not add this node to the group"),
                    reason: "refused the node's JOINED: the record in JOINED does not add this node to the group"
                )
            ]
        )
    }

    @Test("an engine failure while the machine waits for it is refused with the engine's ERROR")
    func engineFailure() {
        var machine = Self.met()
        let error = WireError(.internal, "the node failed while reading its groups")
        #expect(
            machine.engineFailed(error, reason: "reading the groups failed: disk") == [
                .refuse(error, reason: "reading the groups failed: disk")
            ]
        )
    }

    // MARK: Rules

    @Test("the not-a-member message says what to do, or that this node is in no group")
    func notMemberMessages() {
        #expect(
            HandshakeMachine.notMember(nodeInNoGroup: true, problem: nil)
                == WireError(.notMember, "this node belongs to no group yet, so it shares nothing")
        )
        #expect(
            HandshakeMachine.notMember(nodeInNoGroup: true, problem: "x")
                == WireError(.notMember, "this node belongs to no group yet, so it shares nothing (x)")
        )
    }

    @Test("a JOINED whose record is not validly signed is invalid")
    func forgedJoined() throws {
        var forged = try Self.memberRecord(Self.me.node)
        forged[forged.count - 1] ^= 1
        #expect(
            HandshakeMachine.answer(
                toJoined: JoinedGroup(group: Self.group, record: forged),
                me: Self.me.node,
                log: Self.log.author,
                alreadyMember: true
            ) == WireError(.badRecord, "the record in JOINED is invalid")
        )
        let other = GroupID(unchecked: Data(repeating: 0x44, count: 32))
        #expect(
            HandshakeMachine.answer(
                toJoined: JoinedGroup(group: other, record: try Self.memberRecord(Self.me.node)),
                me: Self.me.node,
                log: Self.log.author,
                alreadyMember: false
            ) == WireError(.badRecord, "the record in JOINED does not add this node to the group")
        )
    }
}
