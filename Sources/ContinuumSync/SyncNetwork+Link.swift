import ContinuumCore
import ContinuumSession
import ContinuumWire

// The handshake's link steps (PROTOCOL.md §7.8.19), performed for the ``HandshakeMachine``.

/// What the handshake's loop keeps for a link or a recovery: the two sides, and the peer's link (on the side that
/// made the code) or recovery (on the side that answers it).
struct LinkContext {
    var meeting: HandshakeMeeting?
    var theirs: Membership.Link?
    var recovery: Membership.Recovery?
}

extension SyncNetwork {
    /// Performs a link step and gives the machine the engine's answer.
    func performLink(
        _ action: HandshakeAction,
        machine: inout HandshakeMachine,
        join: JoinAttempt?,
        context: LinkContext
    ) async -> [HandshakeAction] {
        guard let meeting = context.meeting else { preconditionFailure("a link step before the MEMBERSHIP") }
        let nonces = (ours: meeting.ours.nonce, theirs: meeting.theirs.nonce)
        switch action {
        case .consentTo(let records):
            join?.linking.withLockedValue { $0 = records }
            do {
                return machine.consentSigned(.success(try await engine.consent(to: records, linker: meeting.peer)))
            } catch {
                return machine.consentSigned(.failure(error))
            }
        case .signLink(let consent):
            guard let link = context.theirs else { preconditionFailure("a link signed without the peer's link") }
            do {
                let linked = try await engine.signLink(link, consent: consent, from: meeting.peer, nonces: nonces)
                return machine.linkSigned(.success(linked))
            } catch {
                return machine.linkSigned(.failure(error))
            }
        case .recordLink(let linked):
            let records = join?.linking.withLockedValue { $0 } ?? []
            do {
                let groups = try await engine.store.recordLink(
                    records: records,
                    add: linked.record,
                    groups: linked.groups,
                    name: meeting.theirs.name
                )
                await engine.refreshMembership()
                return machine.linkRecorded(.success(groups))
            } catch {
                logger.failure("recording the link failed", error)
                return machine.linkRecorded(.failure(WireError(.badRecord, "\(error)")))
            }
        case .recoverAccount(let records):
            guard let key = join?.recovery else { preconditionFailure("a recovery without the recovery key") }
            do {
                let recovered = try await engine.recover(records, key: key, name: join?.name)
                return machine.recoverySigned(.success(recovered))
            } catch {
                return machine.recoverySigned(.failure(error))
            }
        case .takeRecovery(let records):
            guard let recovery = context.recovery else { preconditionFailure("a RECOVERY without the peer's recovery") }
            do {
                let groups = try await engine.takeRecovery(records, key: recovery.key, from: meeting.peer)
                return machine.recoveryTaken(.success(groups))
            } catch {
                return machine.recoveryTaken(.failure(error))
            }
        default:
            preconditionFailure("\(action) is not a link step")
        }
    }
}
