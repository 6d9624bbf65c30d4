import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

/// Records from the peer: what this node holds already is found before any signature is checked, the rest is
/// verified, and each batch is stored in one transaction.
extension PeerSession {
    /// Lookups of held records one RECORDS or PUSH frame may cost, at most: one for each author's contiguous run of
    /// sequence numbers. Records beyond them are verified as if new (and charged to the peer if they were held).
    static let maxHeldLookups = 64

    /// Verifies a RECORDS or PUSH frame: the records this node holds already, byte for byte, are left out (a record
    /// this node holds was verified when it came first), the others are checked, and the machine gets both.
    func verify(_ batch: [[UInt8]], _ delivery: Delivery) async -> [Machine.Action] {
        let held: [Int: RecordRef]
        do {
            held = try await heldRecords(in: batch)
        } catch {
            logger.failure("looking up the records the peer sent failed", error)
            return machine.failed(while: "looking up records")
        }
        let bytes = batch.reduce(0) { $0 + $1.count }
        let heldRefs = batch.indices.compactMap { held[$0] }
        let fresh = held.isEmpty ? batch : batch.indices.filter { held[$0] == nil }.map { batch[$0] }
        guard !fresh.isEmpty else { return machine.verified([], delivery: delivery, bytes: bytes, held: heldRefs) }
        switch await BatchVerifier.verifyAll(fresh, concurrency: configuration.verifyConcurrency) {
        case .success(let records):
            return machine.verified(records, delivery: delivery, bytes: bytes, held: heldRefs)
        case .failure(let error):
            return machine.verificationFailed("\(error)")
        }
    }

    /// The records of `batch` that this node holds already, by their index in it: those whose bytes equal the
    /// stored record's at the author and sequence they name. Equal bytes mean an equal header, so an equal id (the
    /// SHA-256 of the header): a fork (another record at a held sequence) or a copy with content this node lacks
    /// differs, and is verified as new. The author and sequence are read from their fixed place in the header
    /// without parsing the record; a record that lies about them matches nothing and is verified too.
    func heldRecords(in batch: [[UInt8]]) async throws -> [Int: RecordRef] {
        var byAuthor: [AuthorID: [(sequence: UInt64, index: Int)]] = [:]
        for (index, bytes) in batch.enumerated() {
            guard let (author, sequence) = Self.position(of: bytes) else { continue }
            byAuthor[author, default: []].append((sequence, index))
        }
        var held: [Int: RecordRef] = [:]
        var lookups = 0
        for (author, entries) in byAuthor {
            for run in Self.runs(entries.sorted { $0.sequence < $1.sequence }) {
                // A run above every record of the log held is new (a live record, usually): no lookup.
                guard await store.mayHold(author, from: run[0].sequence) else { continue }
                guard lookups < Self.maxHeldLookups else { return held }
                lookups += 1
                let first = run[0].sequence
                let last = run[run.count - 1].sequence
                let stored = try await store.storedRecords(
                    of: author,
                    in: first...last,
                    limit: Int(last - first) + 1,
                    maxBytes: Int.max / 2
                )
                let bySequence = Dictionary(stored.map { ($0.sequence, $0) }) { first, _ in first }
                for entry in run {
                    guard let record = bySequence[entry.sequence], record.bytes == batch[entry.index] else { continue }
                    held[entry.index] = RecordRef(id: record.id, author: author, sequence: entry.sequence)
                }
            }
        }
        return held
    }

    /// The author and sequence a record's bytes name: at bytes 6 ..< 38 and 38 ..< 46 (big-endian) of the header,
    /// after the magic, the format version and the kind (PROTOCOL.md §2). Nil for bytes too short to hold them.
    static func position(of bytes: [UInt8]) -> (AuthorID, UInt64)? {
        guard bytes.count >= 46 else { return nil }
        let sequence = bytes[38..<46].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard sequence >= 1, sequence <= Limits.maxSequence else { return nil }
        return (AuthorID(unchecked: Data(bytes[6..<38])), sequence)
    }

    /// Sorted entries cut into runs of sequence numbers without a gap (a repeated number stays in its run).
    static func runs(_ sorted: [(sequence: UInt64, index: Int)]) -> [[(sequence: UInt64, index: Int)]] {
        var runs: [[(sequence: UInt64, index: Int)]] = []
        for entry in sorted {
            if let last = runs.last?.last, entry.sequence <= last.sequence + 1 {
                runs[runs.count - 1].append(entry)
            } else {
                runs.append([entry])
            }
        }
        return runs
    }

    /// Stores a batch in one transaction (its records held already are only counted).
    func storeBatch(_ batch: StoreBatch<VerifiedRecord>) async -> [Machine.Action] {
        let sorting = scope.sort(batch.records)
        logSorting(sorting)
        heldPositions.insert(sorting.held)
        let kept = Self.kept(batch, sorting)
        let ingested: Ingested
        let asked: Set<PostID>
        do {
            (ingested, asked) = try await ingest(kept)
        } catch {
            logger.failure("storing records failed", error)
            return machine.storeFailed()
        }
        let arrived = ownLivePosts(of: kept, ingested).filter { !asked.contains($0) }
        if !arrived.isEmpty { engine.postsArrived(arrived, from: peer) }
        for fork in ingested.forks { await engine.emit(.forkDetected(fork)) }
        // New members are known before the next batch is sorted, and the ACK counts the logs this batch made known
        // (its clock was read through the session's view before them).
        var clock = ingested.clock
        let membershipChanged = kept.records.contains { $0.header.changesMembership } && !ingested.stored.isEmpty
        if membershipChanged {
            await engine.refreshMembership()
            // The ACK must carry the clock that counts the logs this batch made known: a failed read ends the batch as
            // a failed store (the peer resends), never an ACK with the clock from before.
            do {
                clock = try await store.clock()
            } catch {
                logger.failure("reading the clock after new members failed", error)
                return machine.storeFailed()
            }
        }
        // A live batch asks again for what it held back; a round's only once logs are made known (``membersChanged()``,
        // already told if by this batch): a round of ours while the peer streams one gets much of what is coming.
        if !membershipChanged, sorting.heldBack > 0, batch.parts.contains(where: { $0.delivery != .catchUp }) {
            askAgain()
        }
        let heldCount = batch.refs.count - batch.count
        let duplicates = kept.count - ingested.stored.count - ingested.forks.count
        return machine.stored(
            StoreOutcome(
                stored: ingested.stored.count,
                brokeRules: ingested.brokeRules,
                clock: clock,
                peerLogs: scope.logsOfPeer(among: kept.records.map(\.header.author)),
                duplicatesOnly: kept.count + heldCount > 0 && kept.count == batch.count && ingested.stored.isEmpty
                    && ingested.forks.isEmpty,
                fromTreeParent: await engine.isTreeParent(
                    peer,
                    ofRecordsBy: kept.records.map(\.header.author) + batch.parts.flatMap(\.held).map(\.author)
                ),
                fromNeighbour: await engine.isNeighbour(peer),
                wasted: sorting.outOfScope.count,
                raced: max(0, duplicates)
            )
        )
    }

    /// The parts of `batch` with only the records `sorting` keeps (a part left with none goes).
    private static func kept(_ batch: StoreBatch<VerifiedRecord>, _ sorting: BatchSorting) -> StoreBatch<VerifiedRecord>
    {
        StoreBatch(
            parts: batch.parts.compactMap { part in
                let records = part.records.filter { sorting.keep.contains($0.id) }
                return records.isEmpty ? nil : StoreBatch.Part(delivery: part.delivery, records: records)
            }
        )
    }

    /// Stores the records kept of a batch in one transaction. The photos of the live posts among them that the peer
    /// made are asked of it beside the commit (``livePostPhotos(of:)``); returns the posts whose photos were so
    /// handed to the fetcher, with what the store says.
    ///
    /// Those photos, and their thumbnails, come on this session, whose machine acts on no photo frame while a store
    /// is under way: they never meet a store without their post, which keeps a photo only while a live post shows
    /// it. Until the store ends, however it ends, the fetcher knows that no post shows them yet for that reason
    /// (``PhotoFetcher/photosStored(_:from:)``): its watchdog, which drops a photo no live post shows (erased while
    /// it came), would otherwise drop each of them after a second of a slow store.
    private func ingest(_ kept: StoreBatch<VerifiedRecord>) async throws -> (Ingested, asked: Set<PostID>) {
        guard !kept.isEmpty else {
            return (Ingested(stored: [], forks: [], brokeRules: [:], clock: try await store.clock()), [])
        }
        let photos = livePostPhotos(of: kept)
        guard !photos.isEmpty else { return (try await store.ingest(kept), []) }
        engine.photosArriving(photos, from: peer)
        defer { engine.photosStored(photos, from: peer) }
        return (try await store.ingest(kept), Set(photos.map(\.post)))
    }

    /// The photos sent as files of their own (over ``WireLimits/smallPhotoBytes``) of the live posts of `batch`
    /// (gossip or push) that the peer made (of one of its logs: it stored each photo before it signed the post),
    /// verified and not yet stored: the fetcher asks for them at once (PROTOCOL.md §7.8.11, *Asking*). A round's
    /// posts, those a peer relays (it may not have the photo yet), and small photos (asked for together, once
    /// stored: ``ownLivePosts(of:_:)``) are not among them.
    func livePostPhotos(of batch: StoreBatch<VerifiedRecord>) -> [MissingPhoto] {
        ownLivePosts(in: batch).compactMap { record, group in
            guard case .post(_, let photo, _) = record.body, photo.byteCount > UInt64(WireLimits.smallPhotoBytes)
            else { return nil }
            return MissingPhoto(
                hash: photo.sha256,
                bytes: photo.byteCount,
                post: PostID(record.id),
                groups: [group],
                signedThumbnail: photo.thumbnail?.sha256
            )
        }
    }

    /// The posts of `batch` that came live (gossip or push) from the node that made them (of one of the peer's logs:
    /// it stored the photo before it signed the post), were newly stored and break no rule: their photos are asked of
    /// this peer at once (``PhotoFetcher/postsArrived(_:from:)``). A round's, and those a peer relays (it may not have
    /// the photo yet), are left to the fetcher's look.
    func ownLivePosts(of batch: StoreBatch<VerifiedRecord>, _ ingested: Ingested) -> [PostID] {
        let stored = Set(ingested.stored)
        return ownLivePosts(in: batch).map(\.record).filter { record in
            stored.contains(record.id) && ingested.brokeRules[record.id] == nil
        }.map { PostID($0.id) }
    }

    /// The posts of `batch` that came live (gossip or push) and are of one of the peer's own logs, each with its
    /// log's group.
    private func ownLivePosts(in batch: StoreBatch<VerifiedRecord>) -> [(record: VerifiedRecord, group: GroupID)] {
        let posts = batch.parts.filter { $0.delivery != .catchUp }.flatMap(\.records).filter {
            $0.header.kind == .post
        }
        guard !posts.isEmpty else { return [] }
        let groups = scope.groupsOfPeerLogs(among: posts.map(\.header.author))
        return posts.compactMap { record in groups[record.header.author].map { (record, $0) } }
    }

    /// Records held back (of logs not known here as members yet, such as a live post of a group joined a moment ago
    /// whose records have not come, or logs that the batch that held them made known) are asked for again now, not at
    /// the next anti-entropy round: by a round of ours, which brings what else this node lacks (first, so that the
    /// member records it brings are stored before the records they make known), then by a REQUEST of their positions,
    /// since the peer sends no record twice down one connection in a round (PROTOCOL.md §7.8.7). What comes is
    /// stored, or held back again until logs are made known (``membersChanged()``), so these end once nothing new is
    /// learned; one runs at a time (records held back meanwhile get one more after it), so a peer that keeps sending
    /// records of unknown logs gets one after another, never a pile.
    private func askAgain() {
        guard !heldPositions.isEmpty else { return }
        guard !askingAgain.running else {
            askingAgain.again = true
            return
        }
        askingAgain.running = true
        spawn { session in await session.askAgainRounds() }
    }

    private func askAgainRounds() async {
        repeat {
            askingAgain.again = false
            let held = heldPositions.takeRanges()
            // No round: the session has ended, or ends for a clock it could not read; the positions go with it.
            guard !held.isEmpty, let round = await startRound() else { break }
            send(.request(held))
            _ = await waitForRound(round, timeout: Self.askAgainWait)
        } while askingAgain.again && !closed
        askingAgain.running = false
    }

    /// Who is in which group was read again (``SyncEngine/refreshMembership()``), and logs may be known now that
    /// were not: records held back since they were last asked for, from a round's batches too (the peer's answer to
    /// a HAVE, or its catch-up after skipping live gossip, may bring a log's records before the member record that
    /// makes it known, from this peer or another), are asked for again now.
    func membersChanged() { askAgain() }

    /// How long a round that asks again is waited for before the next one may start.
    static let askAgainWait: Duration = .seconds(30)

    /// Logs what a batch's sorting left out: records of groups the session does not share, member records not
    /// signed by an admin, records of authors not known as members (or removed).
    private func logSorting(_ sorting: BatchSorting) {
        if let first = sorting.outOfScope.first {
            logger.notice(
                "records of a group this session does not share were not stored",
                metadata: ["records": "\(sorting.outOfScope.count)", "first": "\(first)"]
            )
        }
        for author in Set(sorting.notAdmin) {
            logger.notice(
                "held back a member record signed by a log that is not an admin of its group here",
                metadata: ["author": "\(author.short)"]
            )
        }
        if sorting.heldBack > 0 || sorting.removed > 0 {
            logger.debug(
                "records not stored: their authors are not known as members here, or were removed",
                metadata: ["unknown": "\(sorting.heldBack)", "removed": "\(sorting.removed)"]
            )
        }
    }
}
