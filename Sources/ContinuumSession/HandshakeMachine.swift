import ContinuumCore
import ContinuumWire

/// The connection handshake (PROTOCOL.md §7.8.3) as a value: the peer's frames and the engine's answers in, what to
/// write, ask and end out. No socket, no store, no clock: the executor in ContinuumSync reads, writes and asks; the
/// handshake's time limit is its too (it closes without an ERROR, as §7.8.3 step 9 says).
///
/// Every refusal is an ERROR, then the close (``HandshakeAction/refuse(_:reason:)``); the only ends without one are a
/// peer's own ERROR (never answered), a stream that ended, and a failure below the frames (TLS).
public struct HandshakeMachine: Sendable {
    /// Where the handshake is, with only what is valid there.
    enum State: Sendable {
        /// Before ``start()``: our HELLO is not sent yet.
        case idle
        /// Our HELLO is sent; the peer's first frame must be its HELLO.
        case awaitingHello
        /// The engine checks the peer's HELLO.
        case checkingHello(Hello)
        /// The engine makes our MEMBERSHIP.
        case preparingMembership(HandshakeMeeting)
        /// Our MEMBERSHIP is sent; the peer's next frame must be its MEMBERSHIP.
        case awaitingMembership(HandshakeMeeting)
        /// The engine admits the peer on its MEMBERSHIP.
        case admitting(HandshakeMeeting)
        /// A joiner, admitted: the peer's next frame must be its JOINED (or an ERROR refusing the join).
        case awaitingJoined(HandshakeMeeting, HandshakeAdmission)
        /// A joiner with the JOINED: the engine says whether this node is in its group already.
        case checkingJoined(HandshakeMeeting, HandshakeAdmission, JoinedGroup)
        /// A joiner whose JOINED holds: the engine records the group joined.
        case recordingJoin(HandshakeMeeting, HandshakeAdmission, JoinedGroup)
        /// A new device with the LINKING: the engine signs its consent.
        case signingConsent(HandshakeMeeting, HandshakeAdmission)
        /// A new device whose CONSENT is sent: the peer's next frame must be its LINKED.
        case awaitingLinked(HandshakeMeeting, HandshakeAdmission)
        /// A new device with the LINKED: the engine records the link.
        case recordingLink(HandshakeMeeting, HandshakeAdmission)
        /// The device that made the link code, its LINKING sent: the peer's next frame must be its CONSENT.
        case awaitingConsent(HandshakeMeeting, HandshakeAdmission)
        /// The device that made the link code, with the CONSENT: the engine signs the add.
        case signingLink(HandshakeMeeting, HandshakeAdmission)
        /// A new device recovering an account, with the LINKING: the engine signs and records its recovery.
        case signingRecovery(HandshakeMeeting, HandshakeAdmission)
        /// A node that sent a recovering device the LINKING: the peer's next frame must be its RECOVERY.
        case awaitingRecovery(HandshakeMeeting, HandshakeAdmission)
        /// A node with the RECOVERY: the engine takes its records.
        case takingRecovery(HandshakeMeeting, HandshakeAdmission)
        /// A node in no group refused the peer: the peer's own verdict (an ERROR) may follow, and is reported instead.
        case awaitingVerdict(HandshakeMeeting)
        /// The connection is a session now; the machine has nothing more to say.
        case established
        /// The handshake ended; the machine has nothing more to say.
        case closed
    }

    private var state: State = .idle
    /// This node's HELLO.
    private let ours: Hello
    /// The peer's address, for the log.
    private let host: String
    /// The join this side makes, if it dialled to join.
    private let join: HandshakeJoin?

    /// A handshake that sends `ours` to the peer at `host`, and makes `join` when there is one.
    public init(ours: Hello, host: String, join: HandshakeJoin? = nil) {
        self.ours = ours
        self.host = host
        self.join = join
    }

    /// Whether the handshake has ended, either way.
    public var isFinished: Bool {
        switch state {
        case .established, .closed: true
        default: false
        }
    }

    /// Whether the machine waits for a frame from the peer (rather than for an answer of the engine, or nothing).
    public var awaitsFrame: Bool {
        switch state {
        case .awaitingHello, .awaitingMembership, .awaitingJoined, .awaitingVerdict, .awaitingLinked, .awaitingConsent,
            .awaitingRecovery:
            true
        default: false
        }
    }

    // MARK: The connection

    /// The connection is up (after TLS): our HELLO goes first, without waiting for the peer's (§7.8.3 step 1).
    public mutating func start() -> [HandshakeAction] {
        guard case .idle = state else { return [] }
        state = .awaitingHello
        return [.send(.hello(ours))]
    }

    /// A whole, well-formed message from the peer.
    public mutating func receive(_ message: WireMessage) -> [HandshakeAction] {
        switch state {
        case .awaitingHello:
            guard case .hello(let hello) = message else { return unexpected(message, at: .hello) }
            state = .checkingHello(hello)
            return [.checkHello(hello)]
        case .awaitingMembership(let meeting):
            guard case .membership(let membership) = message else {
                return unexpected(message, at: .membership, meeting: meeting)
            }
            state = .admitting(meeting)
            return [.admit(meeting, membership)]
        case .awaitingJoined(let meeting, let admission):
            switch join {
            case .some(.link), .some(.recover):
                guard case .linking(let records) = message else {
                    return unexpected(message, at: .linking, meeting: meeting)
                }
                if join == .recover {
                    state = .signingRecovery(meeting, admission)
                    return [.recoverAccount(records)]
                }
                state = .signingConsent(meeting, admission)
                return [.consentTo(records)]
            default: break
            }
            guard case .joined(let group, let record) = message else {
                return unexpectedJoined(message, meeting: meeting)
            }
            let joined = JoinedGroup(group: group, record: record)
            state = .checkingJoined(meeting, admission, joined)
            return [.checkJoined(joined)]
        case .awaitingVerdict(let meeting):
            if case .error(let error) = message { return end(refusedBy: error, meeting: meeting) }
            return endStranger(meeting)
        case .awaitingLinked(let meeting, let admission):
            guard case .linked(let record, let groups) = message else {
                return unexpected(message, at: .linked, meeting: meeting)
            }
            state = .recordingLink(meeting, admission)
            return [.recordLink(LinkedAccount(record: record, groups: groups))]
        case .awaitingConsent(let meeting, let admission):
            guard case .consent(let consent) = message else {
                return unexpected(message, at: .consent, meeting: meeting)
            }
            state = .signingLink(meeting, admission)
            return [.signLink(consent: consent)]
        case .awaitingRecovery(let meeting, let admission):
            guard case .recovery(let records) = message else {
                return unexpected(message, at: .recovery, meeting: meeting)
            }
            state = .takingRecovery(meeting, admission)
            return [.takeRecovery(records)]
        case .idle, .checkingHello, .preparingMembership, .admitting, .checkingJoined, .recordingJoin, .signingConsent,
            .recordingLink, .signingLink, .signingRecovery, .takingRecovery:
            preconditionFailure("the executor reads no frame while the handshake waits for the engine")
        case .established, .closed:
            return []
        }
    }

    /// The stream ended: the peer closed the connection, or the handshake's time limit closed it. Nothing is sent.
    public mutating func streamEnded() -> [HandshakeAction] {
        switch state {
        case .awaitingVerdict(let meeting): return endStranger(meeting)
        case .established, .closed: return []
        default:
            let name = Stage(state)?.name ?? "frame"
            return close("closed during the handshake (no \(name) within the time limit)")
        }
    }

    /// The frame decoder refused what the peer sent (too large, malformed, an unknown version or type, TLS bytes at a
    /// plaintext node): that ERROR goes to the peer, then the close (§7.1, §7.6).
    public mutating func decodeFailed(_ error: WireError) -> [HandshakeAction] {
        switch state {
        case .awaitingVerdict(let meeting): return endStranger(meeting)
        case .established, .closed: return []
        default: return refuse(error, "handshake failed: \(error.code): \(error.message)")
        }
    }

    /// The connection failed below the frames (the TLS handshake failed, the socket broke): no ERROR can cross it.
    public mutating func transportFailed(_ description: String) -> [HandshakeAction] {
        switch state {
        case .awaitingVerdict(let meeting): return endStranger(meeting)
        case .established, .closed: return []
        default: return close("handshake failed: \(description)")
        }
    }

    /// This node is stopping: the peer is told so (§7.8.12).
    public mutating func stopping() -> [HandshakeAction] {
        switch state {
        case .established, .closed: return []
        default: return refuse(Self.shuttingDown, "this node is shutting down")
        }
    }

    /// The engine failed while answering what the machine asked (a store that failed): `error` goes to the peer, and
    /// `reason` to the log.
    public mutating func engineFailed(_ error: WireError, reason: String) -> [HandshakeAction] {
        switch state {
        case .checkingHello, .preparingMembership, .admitting, .checkingJoined, .recordingJoin, .signingConsent,
            .recordingLink, .signingLink, .signingRecovery, .takingRecovery:
            return refuse(error, reason)
        default:
            preconditionFailure("an engine's failure while the handshake asked nothing")
        }
    }

    // MARK: The engine's answers

    /// The engine's verdict on the peer's HELLO (§7.8.3 step 3). A joiner by invite then checks that the peer is the
    /// node that made the invite (step 4), and our MEMBERSHIP is made.
    public mutating func helloChecked(_ verdict: HelloVerdict) -> [HandshakeAction] {
        guard case .checkingHello(let theirs) = state else { preconditionFailure("no HELLO is being checked") }
        switch verdict {
        case .passed: break
        case .refused(let error): return refuse(error, "refused: \(error.message)")
        case .noEd25519Certificate:
            return refuse(Self.noEd25519Certificate, "refused: no Ed25519 certificate from the peer")
        case .certificateUnreadable(let description):
            let error = WireError(.internal, "the node failed while reading your TLS certificate")
            return refuse(error, "handshake failed: \(description)")
        }
        let meeting = HandshakeMeeting(theirs: theirs, ours: ours, host: host)
        switch join {
        case .invite(let prefix, _), .link(let prefix):
            if let refusal = Self.inviterProblem(peer: meeting.peer, nodePrefix: prefix) {
                let what = if case .link = join { "link code" } else { "invite" }
                return refuse(
                    refusal,
                    "the node at \(host) (\(meeting.peer.short)) is not the one that made the \(what)"
                )
            }
        default: break
        }
        state = .preparingMembership(meeting)
        return [.prepareMembership(meeting)]
    }

    /// Our MEMBERSHIP, made: it goes to the peer, whose MEMBERSHIP is awaited next.
    public mutating func membershipPrepared(_ membership: Membership) -> [HandshakeAction] {
        guard case .preparingMembership(let meeting) = state else { preconditionFailure("no MEMBERSHIP was asked") }
        state = .awaitingMembership(meeting)
        return [.send(.membership(membership))]
    }

    /// The engine's admission of the peer, or the ERROR that refuses it (a join refused). A join accepted is
    /// answered with JOINED; a joiner then awaits the peer's JOINED; with no group shared, the peer is refused.
    public mutating func admitted(_ result: Result<HandshakeAdmission, WireError>) -> [HandshakeAction] {
        guard case .admitting(let meeting) = state else { preconditionFailure("no admission was asked") }
        let admission: HandshakeAdmission
        switch result {
        case .success(let admitted): admission = admitted
        case .failure(let error): return refuse(error, "refused: \(error.message)")
        }
        if let linking = admission.linking {
            state = admission.recovering ? .awaitingRecovery(meeting, admission) : .awaitingConsent(meeting, admission)
            return [.send(.linking(linking))]
        }
        var actions: [HandshakeAction] = []
        if let joined = admission.joined {
            actions += [
                .send(.joined(group: joined.group, record: joined.record)),
                .shareWithExistingSession(peer: meeting.theirs.node, group: joined.group),
            ]
        }
        if join != nil {
            state = .awaitingJoined(meeting, admission)
            return actions
        }
        return actions + settle(meeting, admission)
    }

    /// Whether this node is in the group of the JOINED received already. The JOINED is then taken (the group is
    /// recorded) or refused (§7.8.3 step 6).
    public mutating func joinedChecked(alreadyMember: Bool) -> [HandshakeAction] {
        guard case .checkingJoined(let meeting, let admission, let joined) = state else {
            preconditionFailure("no JOINED is being checked")
        }
        guard let join else { preconditionFailure("a JOINED checked on a connection that joins nothing") }
        guard let log = join.log else { preconditionFailure("a JOINED checked on a connection that links") }
        if let refusal = Self.answer(toJoined: joined, me: meeting.me, log: log, alreadyMember: alreadyMember) {
            let whose = if case .request = join { "the node's" } else { "the inviter's" }
            let report: [HandshakeAction] =
                refusal.code == .inviteRefused
                ? [.reportJoin(.failed("already a member of group \(joined.group.short)"))]
                : []
            return report + refuse(refusal, "refused \(whose) JOINED: \(refusal.message)")
        }
        state = .recordingJoin(meeting, admission, joined)
        return [.recordJoin(joined)]
    }

    /// The group joined is recorded: a session with the peer that exists already takes it, the join is reported,
    /// and the group is shared.
    public mutating func joinRecorded() -> [HandshakeAction] {
        guard case .recordingJoin(let meeting, var admission, let joined) = state else {
            preconditionFailure("no join is being recorded")
        }
        admission.groups.insert(joined.group)
        return [
            .shareWithExistingSession(peer: meeting.theirs.node, group: joined.group),
            .reportJoin(.joined(joined.group)),
        ]
            + settle(meeting, admission, joined: true)
    }

    // MARK: Linking a device

    /// A new device signed its consent to the LINKING's account (or the engine refused the LINKING): CONSENT goes to
    /// the peer, whose LINKED is awaited.
    public mutating func consentSigned(_ result: Result<[UInt8], WireError>) -> [HandshakeAction] {
        guard case .signingConsent(let meeting, let admission) = state else {
            preconditionFailure("no consent was asked")
        }
        switch result {
        case .success(let consent):
            state = .awaitingLinked(meeting, admission)
            return [.send(.consent(consent))]
        case .failure(let error):
            return [.reportJoin(.failed(error.message))] + refuse(error, "refused the LINKING: \(error.message)")
        }
    }

    /// The device that made the link code signed the add (or refused the consent): LINKED goes to the peer, and the
    /// session goes on with the account's groups.
    public mutating func linkSigned(_ result: Result<LinkedAccount, WireError>) -> [HandshakeAction] {
        guard case .signingLink(let meeting, var admission) = state else { preconditionFailure("no link was asked") }
        switch result {
        case .success(let linked):
            admission.groups.formUnion(linked.groups)
            return [.send(.linked(record: linked.record, groups: linked.groups))] + settleLink(meeting, admission)
        case .failure(let error):
            return refuse(error, "refused the link: \(error.message)")
        }
    }

    /// A new device recorded its link: the groups the LINKED named are shared, and the link is reported.
    public mutating func linkRecorded(_ result: Result<Set<GroupID>, WireError>) -> [HandshakeAction] {
        guard case .recordingLink(let meeting, var admission) = state else { preconditionFailure("no link recorded") }
        switch result {
        case .success(let groups):
            admission.groups.formUnion(groups)
            return [.reportJoin(.linked)] + settleLink(meeting, admission)
        case .failure(let error):
            return [.reportJoin(.failed(error.message))] + refuse(error, "refused the LINKED: \(error.message)")
        }
    }

    // MARK: Recovering an account

    /// A new device signed and recorded its recovery (or the engine refused the LINKING): RECOVERY goes to the peer,
    /// and the session goes on with the account's groups.
    public mutating func recoverySigned(_ result: Result<RecoveredAccount, WireError>) -> [HandshakeAction] {
        guard case .signingRecovery(let meeting, var admission) = state else {
            preconditionFailure("no recovery was asked")
        }
        switch result {
        case .success(let recovered):
            admission.groups.formUnion(recovered.groups)
            return [.send(.recovery(recovered.records)), .reportJoin(.linked)] + settleLink(meeting, admission)
        case .failure(let error):
            return [.reportJoin(.failed(error.message))] + refuse(error, "refused the LINKING: \(error.message)")
        }
    }

    /// The RECOVERY's records were taken (or refused): the session goes on with the account's groups it shares.
    public mutating func recoveryTaken(_ result: Result<Set<GroupID>, WireError>) -> [HandshakeAction] {
        guard case .takingRecovery(let meeting, var admission) = state else {
            preconditionFailure("no RECOVERY is being taken")
        }
        switch result {
        case .success(let groups):
            admission.groups.formUnion(groups)
            return settleLink(meeting, admission)
        case .failure(let error):
            return refuse(error, "refused the RECOVERY: \(error.message)")
        }
    }

    /// A link is done: a session with the account's groups, or (an account in no group yet) a close with nothing more
    /// to say, since the link itself was the point.
    private mutating func settleLink(_ meeting: HandshakeMeeting, _ admission: HandshakeAdmission) -> [HandshakeAction]
    {
        guard admission.groups.isEmpty else { return settle(meeting, admission, joined: true) }
        return close("linked \(meeting.peer.short): no group to share yet")
    }

    // MARK: Endings

    /// The membership is settled: a session with the groups shared, or the refusal of a stranger (§7.8.3 step 7).
    private mutating func settle(
        _ meeting: HandshakeMeeting,
        _ admission: HandshakeAdmission,
        joined: Bool = false
    ) -> [HandshakeAction] {
        guard admission.groups.isEmpty else {
            state = .established
            let outcome = HandshakeOutcome(
                meeting: meeting,
                groups: admission.groups,
                joined: joined || admission.joined != nil
            )
            return [.established(outcome)]
        }
        let refusal = Self.notMember(nodeInNoGroup: admission.nodeInNoGroup, problem: admission.problem)
        guard admission.nodeInNoGroup else {
            return [.rememberStranger(meeting)] + refuse(refusal, strangerReason(meeting))
        }
        // A node in no group reports the peer's verdict instead (usually on its way), which says what to do.
        state = .awaitingVerdict(meeting)
        return [.send(.error(refusal))]
    }

    private func strangerReason(_ meeting: HandshakeMeeting) -> String {
        "refused \(meeting.peer.short): it shares no group with this node"
    }

    /// No verdict from the peer came: the refusal stands as this node's own.
    private mutating func endStranger(_ meeting: HandshakeMeeting) -> [HandshakeAction] {
        [.rememberStranger(meeting)] + close(strangerReason(meeting))
    }

    /// The peer's ERROR: never answered (§7.8.12). Once the HELLOs have met, it is remembered for `peers`.
    private mutating func end(refusedBy error: WireError, meeting: HandshakeMeeting?) -> [HandshakeAction] {
        let remember: [HandshakeAction] = meeting.map { [.rememberRefusal($0, error)] } ?? []
        return remember + close("the peer refused: \(error.code): \(error.message)")
    }

    /// A frame other than the one awaited: the peer's ERROR ends the connection, anything else is refused.
    private mutating func unexpected(
        _ message: WireMessage,
        at stage: Stage,
        meeting: HandshakeMeeting? = nil
    ) -> [HandshakeAction] {
        // Never answer an ERROR with an ERROR.
        if case .error(let error) = message { return end(refusedBy: error, meeting: meeting) }
        return refuse(
            WireError(.unexpectedMessage, "expected \(stage.name)"),
            "refused: \(stage.position) was \(message.typeName), not \(stage.name)"
        )
    }

    /// Not a JOINED where a joiner awaits one. ERROR *request pending* answers a request to join that waits for an
    /// admin: reported as such, and neither logged as a refusal nor remembered (the asker asks again soon).
    private mutating func unexpectedJoined(_ message: WireMessage, meeting: HandshakeMeeting) -> [HandshakeAction] {
        if case .error(let error) = message, error.code == .requestPending {
            return [.reportJoin(.pending(error.message))]
                + close("the request to join waits for an admin: \(error.message)")
        }
        return unexpected(message, at: .joined, meeting: meeting)
    }

    private mutating func refuse(_ error: WireError, _ reason: String) -> [HandshakeAction] {
        state = .closed
        return [.refuse(error, reason: reason)]
    }

    private mutating func close(_ reason: String) -> [HandshakeAction] {
        state = .closed
        return [.close(reason: reason)]
    }
}

extension HandshakeMachine {
    /// A point of the handshake where the machine waits for one message from the peer.
    struct Stage {
        /// The message waited for, as PROTOCOL.md names it: `HELLO`.
        let name: String
        /// Which frame of the connection it is, for the log: `the first frame`.
        let position: String

        static let hello = Stage(name: "HELLO", position: "the first frame")
        static let membership = Stage(name: "MEMBERSHIP", position: "the frame after HELLO")
        static let joined = Stage(name: "JOINED", position: "the frame after MEMBERSHIP")
        static let linking = Stage(name: "LINKING", position: "the frame after MEMBERSHIP")
        static let consent = Stage(name: "CONSENT", position: "the frame after LINKING")
        static let linked = Stage(name: "LINKED", position: "the frame after CONSENT")
        static let recovery = Stage(name: "RECOVERY", position: "the frame after LINKING")

        /// The stage of a state that waits for a frame, or of one waiting for the engine on the way to the next.
        init?(_ state: State) {
            switch state {
            case .idle, .awaitingHello, .checkingHello: self = .hello
            case .preparingMembership, .awaitingMembership, .admitting: self = .membership
            case .awaitingJoined, .checkingJoined, .recordingJoin: self = .joined
            case .signingConsent, .awaitingLinked, .recordingLink: self = .linked
            case .awaitingConsent, .signingLink: self = .consent
            case .signingRecovery: self = .linking
            case .awaitingRecovery, .takingRecovery: self = .recovery
            case .awaitingVerdict, .established, .closed: return nil
            }
        }

        private init(name: String, position: String) {
            self.name = name
            self.position = position
        }
    }
}
