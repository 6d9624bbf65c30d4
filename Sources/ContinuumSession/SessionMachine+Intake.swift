import ContinuumWire

extension SessionMachine {
    /// The records from the peer on their way to the store, as one value: what is under way (a verification, a
    /// store, or both), the messages that wait for it, and the verified records that wait for the next store. Each
    /// stage holds only what is valid in it: messages wait only while something is under way, and a batch being
    /// stored carries the frames it acknowledges.
    ///
    /// A store starts from what is pending, when none is under way. A verification starts while nothing is under way,
    /// or beside a store when no verification is under way, no message waits and fewer than ``Configuration``'s
    /// `readAheadRecords` are pending (``mayVerifyBesideStore(below:)``): the next frame is verified on the other
    /// cores while a batch is written, and waits, verified, for the next store. (The two also overlap when a flush
    /// timer fires while a frame is being verified: the store starts, and the verification's records wait for the
    /// next one.)
    struct Intake: Sendable {
        /// What is under way, with the messages received since.
        private(set) var stage = Stage.idle
        /// Verified records not yet handed to a store.
        var pending = Pending()
        /// The generation of the last flush timer scheduled: only that timer stores what is pending.
        private(set) var flushGeneration = 0

        /// What is under way, and the messages from the peer that wait for it, in the order they came.
        enum Stage: Sendable {
            /// Nothing under way: messages are acted on as they come.
            case idle
            /// A verification under way (`.verify`).
            case verifying(held: [Held])
            /// A batch being stored (`.store`); `verifying`: a verification is under way too.
            case storing(Storing, verifying: Bool, held: [Held])
        }

        /// Verified records that wait to be stored together, and what storing them will acknowledge.
        struct Pending: Sendable {
            /// The verified frames, in the order they came.
            private(set) var parts: [StoreBatch<Record>.Part] = []
            /// The records of ``parts`` to store.
            private(set) var count = 0
            /// The RECORDS frames among ``parts``: each is acknowledged once stored.
            private(set) var frames = 0
            /// Whether a part came by live gossip or push: once stored, the live parts are checked for gaps.
            private(set) var live = false

            var isEmpty: Bool { parts.isEmpty }

            /// Adds a verified frame.
            mutating func append(_ part: StoreBatch<Record>.Part) {
                parts.append(part)
                count += part.records.count
                if part.delivery != .push { frames += 1 }
                live = live || part.delivery != .catchUp
            }
        }

        /// A batch handed to the store, with the RECORDS frames to acknowledge when it is stored, and whether a part
        /// of it was live.
        struct Storing: Sendable {
            let batch: StoreBatch<Record>
            let frames: Int
            let live: Bool
        }

        /// A message from the peer held back until what is under way has finished, with when it came.
        struct Held: Sendable {
            let message: WireMessage
            let at: ContinuousClock.Instant
        }

        /// True while a verification or a store is under way.
        var isBusy: Bool {
            if case .idle = stage { false } else { true }
        }

        /// True while a verification is under way.
        var isVerifying: Bool {
            switch stage {
            case .idle: false
            case .verifying: true
            case .storing(_, let verifying, _): verifying
            }
        }

        /// Holds back a message until what is under way has finished. Only while something is under way.
        mutating func hold(_ message: WireMessage, at time: ContinuousClock.Instant) {
            hold([Held(message: message, at: time)])
        }

        /// Holds back messages, after those already held. Only while something is under way.
        mutating func hold<Messages: Collection<Held>>(_ messages: Messages) {
            guard !messages.isEmpty else { return }
            switch stage {
            case .idle: preconditionFailure("a message held back while nothing is under way")
            case .verifying(let held): stage = .verifying(held: held + messages)
            case .storing(let storing, let verifying, let held):
                stage = .storing(storing, verifying: verifying, held: held + messages)
            }
        }

        /// A verification starts (`.verify`).
        mutating func startVerifying() {
            switch stage {
            case .idle: stage = .verifying(held: [])
            case .verifying: break
            case .storing(let storing, _, let held): stage = .storing(storing, verifying: true, held: held)
            }
        }

        /// The verification under way has finished. Returns the messages that waited for it and wait for nothing
        /// else now, to act on in order; while a store is under way they go on waiting for it.
        mutating func endVerifying() -> [Held] {
            switch stage {
            case .idle:
                return []
            case .verifying(let held):
                stage = .idle
                return held
            case .storing(let storing, _, let held):
                stage = .storing(storing, verifying: false, held: held)
                return []
            }
        }

        /// Hands what is pending to a store: the batch to store, or nil when nothing is pending or a store is under
        /// way already (what is pending then waits for the next).
        mutating func startStoring() -> StoreBatch<Record>? {
            guard !pending.isEmpty else { return nil }
            let verifying: Bool
            let held: [Held]
            switch stage {
            case .idle: (verifying, held) = (false, [])
            case .verifying(let waiting): (verifying, held) = (true, waiting)
            case .storing: return nil
            }
            let batch = StoreBatch(parts: pending.parts)
            stage = .storing(
                Storing(batch: batch, frames: pending.frames, live: pending.live),
                verifying: verifying,
                held: held
            )
            pending = Pending()
            return batch
        }

        /// The store under way has finished. Returns it, with the messages that waited for it and wait for nothing
        /// else now (while a verification is under way they go on waiting for it); nil when no store was under way.
        mutating func endStoring() -> (storing: Storing, released: [Held])? {
            guard case .storing(let storing, let verifying, let held) = stage else { return nil }
            if verifying {
                stage = .verifying(held: held)
                return (storing, [])
            }
            stage = .idle
            return (storing, held)
        }

        /// A new flush timer: returns its generation, which makes every earlier timer do nothing.
        mutating func nextFlushGeneration() -> Int {
            flushGeneration += 1
            return flushGeneration
        }

        /// Whether a frame of records may be verified now, beside the store under way: no verification is under way,
        /// no message waits (a frame never overtakes one) and fewer than `limit` verified records wait for the next
        /// store (what the overlap holds in memory).
        func mayVerifyBesideStore(below limit: Int) -> Bool {
            guard case .storing(_, let verifying, let held) = stage else { return false }
            return !verifying && held.isEmpty && pending.count < limit
        }

        /// The first message held back, taken out, when it is a frame of records that may be verified beside the store
        /// under way (as ``mayVerifyBesideStore(below:)`` says, the frame being the first to wait); nil otherwise.
        mutating func takeFrameBesideStore(below limit: Int) -> Held? {
            guard case .storing(let storing, false, let held) = stage, let first = held.first,
                first.message.carriesRecords, pending.count < limit
            else { return nil }
            stage = .storing(storing, verifying: false, held: Array(held.dropFirst()))
            return first
        }

        /// The session has ended: nothing pending is stored and no held message is acted on. What is under way
        /// stays until its result comes.
        mutating func drop() {
            pending = Pending()
            switch stage {
            case .idle: break
            case .verifying: stage = .verifying(held: [])
            case .storing(let storing, let verifying, _): stage = .storing(storing, verifying: verifying, held: [])
            }
        }
    }
}
