import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

@Suite("The handshake's recovery (PROTOCOL.md §7.8.20): LINKING and RECOVERY on both sides, and each refusal")
struct HandshakeRecoveryTests {
    private typealias Link = HandshakeLinkTests
    private static let recovery = Membership.Recovery(
        key: AuthorID(unchecked: Data(repeating: 0x44, count: 32)),
        signature: [UInt8](repeating: 8, count: 64)
    )
    private static let sent: [[UInt8]] = [[7, 7], [8]]

    @Test("the node that answers: LINKING, then the RECOVERY taken, and the groups it shares now")
    func answeringSide() {
        var machine = Link.admitting(theirs: Membership(recovery: Self.recovery))
        #expect(
            machine.admitted(.success(HandshakeAdmission(linking: Link.records, recovering: true)))
                == [.send(.linking(Link.records))]
        )
        #expect(machine.awaitsFrame)
        #expect(machine.receive(.recovery(Self.sent)) == [.takeRecovery(Self.sent)])
        #expect(
            machine.recoveryTaken(.success([Link.group])) == [
                .established(HandshakeOutcome(meeting: Link.meeting, groups: [Link.group], joined: true))
            ]
        )
    }

    @Test("the node that answers refuses a RECOVERY it cannot take, and a CONSENT instead of one")
    func answeringSideRefuses() {
        var taking = Link.admitting(theirs: Membership(recovery: Self.recovery))
        _ = taking.admitted(.success(HandshakeAdmission(linking: Link.records, recovering: true)))
        _ = taking.receive(.recovery(Self.sent))
        let error = WireError(.notMember, "the RECOVERY does not make 111111111111 a device of account 0303")
        #expect(
            taking.recoveryTaken(.failure(error)) == [.refuse(error, reason: "refused the RECOVERY: \(error.message)")]
        )
        #expect(taking.isFinished)
        var other = Link.admitting(theirs: Membership(recovery: Self.recovery))
        _ = other.admitted(.success(HandshakeAdmission(linking: Link.records, recovering: true)))
        #expect(
            other.receive(.consent([UInt8](repeating: 6, count: 64))) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected RECOVERY"),
                    reason: "refused: the frame after LINKING was CONSENT, not RECOVERY"
                )
            ]
        )
    }

    @Test("the new device: recover from the LINKING, send RECOVERY, report it, share the groups")
    func newDeviceSide() {
        var machine = Link.admitting(join: .recover, theirs: Membership())
        #expect(machine.admitted(.success(HandshakeAdmission())) == [])
        #expect(machine.receive(.linking(Link.records)) == [.recoverAccount(Link.records)])
        #expect(
            machine.recoverySigned(.success(RecoveredAccount(records: Self.sent, groups: [Link.group]))) == [
                .send(.recovery(Self.sent)), .reportJoin(.linked),
                .established(HandshakeOutcome(meeting: Link.meeting, groups: [Link.group], joined: true)),
            ]
        )
    }

    @Test("the new device refuses a LINKING whose account is not the recovery key's, and a LINKED instead")
    func newDeviceRefuses() {
        let bad = WireError(.inviteRefused, "the records sent found no account with this recovery code")
        var recovering = Link.admitting(join: .recover, theirs: Membership())
        _ = recovering.admitted(.success(HandshakeAdmission()))
        _ = recovering.receive(.linking(Link.records))
        #expect(
            recovering.recoverySigned(.failure(bad)) == [
                .reportJoin(.failed(bad.message)), .refuse(bad, reason: "refused the LINKING: \(bad.message)"),
            ]
        )
        var linked = Link.admitting(join: .recover, theirs: Membership())
        _ = linked.admitted(.success(HandshakeAdmission()))
        #expect(
            linked.receive(.linked(record: [1], groups: [])) == [
                .refuse(
                    WireError(.unexpectedMessage, "expected LINKING"),
                    reason: "refused: the frame after MEMBERSHIP was LINKED, not LINKING"
                )
            ]
        )
    }
}
