import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

@Suite("The handshake's link (PROTOCOL.md §7.8.19): LINKING, CONSENT and LINKED on both sides, and each refusal")
struct HandshakeLinkTests {
    static let group = GroupID(unchecked: Data(repeating: 0x33, count: 32))
    private static let ours = Hello(
        nonce: SessionNonce(bytes: [UInt8](repeating: 1, count: 32))!,
        node: AuthorID(unchecked: Data(repeating: 0x22, count: 32)),
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
    static let meeting = HandshakeMeeting(theirs: theirs, ours: ours, host: "127.0.0.1")
    private static let link = Membership.Link(
        ticket: [UInt8](repeating: 4, count: 8),
        mac: [UInt8](repeating: 5, count: 32)
    )
    static let records: [[UInt8]] = [[1, 2, 3], [4, 5]]
    private static let consent = [UInt8](repeating: 6, count: 64)
    private static let linked = LinkedAccount(record: [9, 9, 9], groups: [group])
    /// A link into the account of the peer, whose id starts with 0x11.
    private static let linking = HandshakeJoin.link(nodePrefix: [UInt8](repeating: 0x11, count: 8))

    /// A machine that sent its MEMBERSHIP and received the peer's: it waits for the engine's admission.
    static func admitting(join: HandshakeJoin? = nil, theirs membership: Membership) -> HandshakeMachine {
        var machine = HandshakeMachine(ours: ours, host: "127.0.0.1", join: join)
        _ = machine.start()
        _ = machine.receive(.hello(theirs))
        #expect(machine.helloChecked(.passed) == [.prepareMembership(meeting)])
        #expect(machine.membershipPrepared(Membership()) == [.send(.membership(Membership()))])
        #expect(machine.receive(.membership(membership)) == [.admit(meeting, membership)])
        return machine
    }

    @Test("the code's maker: LINKING, then on CONSENT the add is signed, LINKED sent, and the groups shared")
    func makerSide() {
        var machine = Self.admitting(theirs: Membership(link: Self.link))
        #expect(
            machine.admitted(.success(HandshakeAdmission(linking: Self.records))) == [.send(.linking(Self.records))]
        )
        #expect(machine.awaitsFrame)
        #expect(machine.receive(.consent(Self.consent)) == [.signLink(consent: Self.consent)])
        #expect(
            machine.linkSigned(.success(Self.linked)) == [
                .send(.linked(record: Self.linked.record, groups: [Self.group])),
                .established(HandshakeOutcome(meeting: Self.meeting, groups: [Self.group], joined: true)),
            ]
        )
    }

    @Test("the code's maker with no group: LINKED, then the close; a consent it refuses is that ERROR")
    func makerSideEnds() {
        var alone = Self.admitting(theirs: Membership(link: Self.link))
        _ = alone.admitted(.success(HandshakeAdmission(linking: Self.records)))
        _ = alone.receive(.consent(Self.consent))
        #expect(
            alone.linkSigned(.success(LinkedAccount(record: [9], groups: []))) == [
                .send(.linked(record: [9], groups: [])), .close(reason: "linked 111111111111: no group to share yet"),
            ]
        )
        var refusing = Self.admitting(theirs: Membership(link: Self.link))
        _ = refusing.admitted(.success(HandshakeAdmission(linking: Self.records)))
        _ = refusing.receive(.consent(Self.consent))
        let error = WireError(.inviteRefused, "this link code was already used; make a new one with 'device link'")
        #expect(refusing.linkSigned(.failure(error)) == [.refuse(error, reason: "refused the link: \(error.message)")])
        #expect(refusing.isFinished)
    }

    @Test("the code's maker awaiting CONSENT: another frame is refused naming CONSENT; the peer's ERROR ends it")
    func makerSideUnexpected() {
        var machine = Self.admitting(theirs: Membership(link: Self.link))
        _ = machine.admitted(.success(HandshakeAdmission(linking: Self.records)))
        #expect(
            machine.receive(.ping(1)) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected CONSENT"),
                    reason: "refused: the frame after LINKING was PING, not CONSENT"
                )
            ]
        )
        var ended = Self.admitting(theirs: Membership(link: Self.link))
        _ = ended.admitted(.success(HandshakeAdmission(linking: Self.records)))
        let error = WireError(.badRecord, "the account's records hold 0 founding records, not one")
        #expect(
            ended.receive(.error(error)) == [
                .rememberRefusal(Self.meeting, error),
                .close(reason: "the peer refused: bad record: \(error.message)"),
            ]
        )
    }

    @Test("the new device: consent to the LINKING, record the LINKED, report it, share the groups")
    func newDeviceSide() {
        var machine = Self.admitting(join: Self.linking, theirs: Membership())
        #expect(machine.admitted(.success(HandshakeAdmission())) == [])
        #expect(machine.receive(.linking(Self.records)) == [.consentTo(Self.records)])
        #expect(machine.consentSigned(.success(Self.consent)) == [.send(.consent(Self.consent))])
        #expect(machine.receive(.linked(record: [9, 9, 9], groups: [Self.group])) == [.recordLink(Self.linked)])
        #expect(
            machine.linkRecorded(.success([Self.group])) == [
                .reportJoin(.linked),
                .established(HandshakeOutcome(meeting: Self.meeting, groups: [Self.group], joined: true)),
            ]
        )
    }

    @Test("the new device refuses: a LINKING it cannot consent to, a LINKED it cannot record, a JOINED instead")
    func newDeviceRefuses() {
        let bad = WireError(.badRecord, "the device that made the link code is not a device of the account it names")
        var consenting = Self.admitting(join: Self.linking, theirs: Membership())
        _ = consenting.admitted(.success(HandshakeAdmission()))
        _ = consenting.receive(.linking(Self.records))
        #expect(
            consenting.consentSigned(.failure(bad)) == [
                .reportJoin(.failed(bad.message)), .refuse(bad, reason: "refused the LINKING: \(bad.message)"),
            ]
        )
        var recording = Self.admitting(join: Self.linking, theirs: Membership())
        _ = recording.admitted(.success(HandshakeAdmission()))
        _ = recording.receive(.linking(Self.records))
        _ = recording.consentSigned(.success(Self.consent))
        _ = recording.receive(.linked(record: [9, 9, 9], groups: [Self.group]))
        #expect(
            recording.linkRecorded(.failure(bad)) == [
                .reportJoin(.failed(bad.message)), .refuse(bad, reason: "refused the LINKED: \(bad.message)"),
            ]
        )
        var joined = Self.admitting(join: Self.linking, theirs: Membership())
        _ = joined.admitted(.success(HandshakeAdmission()))
        #expect(
            joined.receive(.joined(group: Self.group, record: [1])) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected LINKING"),
                    reason: "refused: the frame after MEMBERSHIP was JOINED, not LINKING"
                )
            ]
        )
    }

    @Test("a link code whose node prefix is not the peer's is refused before MEMBERSHIP")
    func wrongDevice() {
        var machine = HandshakeMachine(
            ours: Self.ours,
            host: "127.0.0.1",
            join: .link(nodePrefix: [UInt8](repeating: 0x12, count: 8))
        )
        _ = machine.start()
        _ = machine.receive(.hello(Self.theirs))
        #expect(
            machine.helloChecked(.passed) == [
                .refuse(
                    WireError(.inviteRefused, "this is not the node that made the invite"),
                    reason: "the node at 127.0.0.1 (111111111111) is not the one that made the link code"
                )
            ]
        )
    }
}
