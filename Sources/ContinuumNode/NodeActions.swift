import ContinuumCore
import ContinuumStore
import ContinuumSync
import Foundation

/// Who hears of what a person did: the sync engine, which sends new records to peers now (rather than at its next
/// look) and tells them which posts this node follows.
public protocol SyncNotifying: Sendable {
    /// Records of this node's were just stored.
    func recordsWritten() async
    /// The followed posts changed.
    func followsChanged() async
}

/// The engine of the node in this process (the HTTP API's).
extension SyncEngine: SyncNotifying {}

/// The engine of the node running on a data directory, told over its control socket (the CLI's); nothing happens
/// when no node runs, and a running node finds the change by itself soon after (it polls the store).
public struct RunningNodeNotifier: SyncNotifying {
    let directory: DataDirectory

    public init(_ directory: DataDirectory) { self.directory = directory }

    public func recordsWritten() async { ControlClient.tell(directory, .stored) }

    public func followsChanged() async { ControlClient.tell(directory, .followsChanged) }
}

/// A new record would break a rule of the record format (a caption over 2048 bytes, a control character):
/// nothing was stored. `message` says which rule, for a person.
public struct RecordRefused: Error, Sendable, CustomStringConvertible {
    public let message: String

    public var description: String { message }
}

/// A new group would have the name of a group this node is in already (compared as search compares words: case and
/// accents aside): people choosing where to post could not tell the two apart.
public struct GroupNameTaken: Error, Sendable, CustomStringConvertible {
    /// The group that has the name.
    public let existing: GroupID
    public let message: String

    public var description: String { message }
}

/// Every change a person makes to this node's data, written once for the command line and the HTTP API: the
/// checks, the signed record, the photo and its thumbnail, and telling the sync engine (also the display name:
/// `init --name` and `PUT /api/name`).
///
/// The front ends parse what people type and resolve ids; they word the errors their own way. Errors are
/// ``StoreError`` (unknown post, not the owner, storage), ``RecordRefused`` and, for a post, ``PhotoRefusal``.
public struct NodeActions: Sendable {
    /// When a new post's thumbnail is made.
    public enum Thumbnailing: Sendable {
        /// Before ``post(_:by:)`` returns: for a command, whose process ends right after.
        case beforeReturning
        /// In the background: for a running node, so that an upload is answered at once.
        case inBackground
    }

    let store: ContinuumStore
    let engine: any SyncNotifying
    let inspector: any PhotoInspecting
    let thumbnails: (any ThumbnailProviding)?
    let thumbnailing: Thumbnailing

    public init(
        store: ContinuumStore,
        engine: any SyncNotifying,
        inspector: any PhotoInspecting,
        thumbnails: (any ThumbnailProviding)?,
        thumbnailing: Thumbnailing
    ) {
        self.store = store
        self.engine = engine
        self.inspector = inspector
        self.thumbnails = thumbnails
        self.thumbnailing = thumbnailing
    }

    // MARK: Posts and comments

    /// Shares a photo: the photo is decoded whole (``PhotoRefusal`` when it is not an image or is damaged), its
    /// location removed unless it is shared or kept (``MediaError`` `.locationNotRemovable` when it cannot be), the
    /// record checked (``RecordRefused``), then the photo stored, the post signed and stored (and followed, with
    /// `autoFollow`), the engine told and the thumbnail made. The post's hash is that of the bytes stored.
    public func post(_ draft: NewPost, by identity: NodeIdentity) async throws -> PostID {
        let signer = try await signer(inGroup: draft.group, of: identity)
        let inspected = try await inspector.inspect(file: draft.photo.url)
        // The location stays home: what is stored and sent is the photo without it, unless shared or kept.
        let photo = try copiedIn(await withoutLocation(draft))
        // Best effort: a copy kept was moved into place (nothing left to remove); one left by a failure, reported on
        // its own, is removed once a day old, when the store is next opened.
        defer { if photo.url != draft.photo.url { try? FileManager.default.removeItem(at: photo.url) } }
        let (hash, bytes) = photo.hashAndSize()
        let thumbnail = await thumbnailToCommit(of: photo.url)
        let body = RecordBody.post(
            caption: draft.caption,
            photo: inspected.reference(sha256: hash, bytes: bytes, takenAt: draft.takenAt, thumbnail: thumbnail),
            location: try draft.sharedLocation(inspected)
        )
        // Checked before anything touches the disk, so that a refused post stores nothing at all.
        try Self.check(body)
        let placed = try place(photo, as: hash, bytes: bytes)
        let record = try await appendKeeping(hash) {
            try await store.append(
                body,
                // Posted now: the feed orders by when a post was posted, whenever the photo was taken.
                createdAt: .now(),
                by: signer,
                autoFollow: draft.autoFollow,
                // One commit for both: the photo is recorded with the post that shows it.
                recording: [placed]
            )
        }
        // Kept before peers hear of the post, so that one asking for it gets the thumbnail the post signs.
        await keepThumbnail(thumbnail, of: hash)
        await engine.recordsWritten()
        if draft.autoFollow { await engine.followsChanged() }
        return PostID(record.id)
    }

    /// Comments on a live post.
    public func comment(on post: PostID, text: String, by identity: NodeIdentity) async throws -> CommentID {
        let body = RecordBody.comment(post: post, text: text)
        try Self.check(body)
        let signer = try await signer(forPost: post, of: identity)
        let record = try await store.append(body, by: signer)
        await engine.recordsWritten()
        return CommentID(record.id)
    }

    /// Changes the caption of one of `identity`'s live posts; returns the Edit record's id.
    public func edit(_ post: PostID, caption: String, by identity: NodeIdentity) async throws -> RecordID {
        try await edit(post, PostEdit(caption: caption), by: identity)
    }

    /// Changes any of the caption, photo and location of one of `identity`'s live posts, in one Edit record;
    /// returns its id. A new photo is decoded whole first (``PhotoRefusal``), like a new post's; the photo it
    /// replaces is erased, here and on every peer, unless another live post shows it (PROTOCOL.md §2.6).
    public func edit(_ post: PostID, _ edit: PostEdit, by identity: NodeIdentity) async throws -> RecordID {
        let target = try await store.resolveTarget(post.hex)
        let identity = try await signer(forAuthor: target.author, of: identity)
        try await requireOwner(target, signer: identity)
        var change = PostChange(caption: edit.caption, location: edit.location)
        var cleaned: PhotoSource?
        var thumbnail: Data?
        defer {
            // Best effort, as for a new post: what is left is in photos/tmp, swept once a day old.
            if let cleaned, cleaned.url != edit.photo?.url { try? FileManager.default.removeItem(at: cleaned.url) }
        }
        if let original = edit.photo {
            let inspected = try await inspector.inspect(file: original.url)
            // The location stays home, as for a new post: the new photo's is removed unless kept.
            let source = try copiedIn(edit.keepMetadata ? original : await withoutLocation(original))
            cleaned = source
            let (hash, bytes) = source.hashAndSize()
            thumbnail = await thumbnailToCommit(of: source.url)
            change.photo = inspected.reference(sha256: hash, bytes: bytes, takenAt: edit.takenAt, thumbnail: thumbnail)
        }
        let body = RecordBody.edit(post: post, change: change)
        // Checked before anything touches the disk, so that a refused edit stores nothing at all.
        try Self.check(body)
        var placed: [PlacedPhoto] = []
        if let source = cleaned, let photo = change.photo {
            placed.append(try place(source, as: photo.sha256, bytes: photo.byteCount))
        }
        let record = try await appendKeeping(change.photo?.sha256) {
            try await store.append(body, by: identity, recording: placed)
        }
        if let photo = change.photo { await keepThumbnail(thumbnail, of: photo.sha256) }
        await engine.recordsWritten()
        return record.id
    }

    /// What ``delete(_:by:)`` did.
    public struct Deletion: Sendable {
        /// The posts and comments deleted, in id order.
        public let targets: [RecordID]
        /// The Delete records signed (one per 256 targets).
        public let records: [RecordID]
    }

    /// Deletes posts and comments of `identity`'s, all or none: each is checked to be theirs before anything is
    /// signed, and every Delete record is stored in one transaction.
    public func delete(_ targets: [ContinuumStore.Target], by identity: NodeIdentity) async throws -> Deletion {
        // Each log signs the deletes of its own records: one per group the targets are in.
        var byLog: [AuthorID: (signer: NodeIdentity, targets: [RecordID])] = [:]
        for target in targets {
            let signer = try await signer(forAuthor: target.author, of: identity)
            try await requireOwner(target, signer: signer)
            byLog[signer.author, default: (signer, [])].targets.append(target.record)
        }
        var records: [RecordID] = []
        for (signer, recordIDs) in byLog.values {
            let sorted = Set(recordIDs).sorted()
            let bodies = stride(from: 0, to: sorted.count, by: Limits.deleteTargets).map { start in
                RecordBody.delete(targets: Array(sorted[start..<min(start + Limits.deleteTargets, sorted.count)]))
            }
            records += try await store.append(bodies, by: signer).map(\.id)
        }
        await engine.recordsWritten()
        return Deletion(targets: Set(targets.map(\.record)).sorted(), records: records)
    }

    /// Hides a comment on one of this node's posts: the post's author signs a delete of it, which every member's
    /// node honours as it honours the comment's author's own (its text is erased). Throws `.notOwner` when the post
    /// is not this node's.
    public func hide(_ comment: CommentID, by identity: NodeIdentity) async throws -> RecordID {
        guard let postAuthor = try await store.postAuthor(ofComment: comment) else {
            throw StoreError(.notFound, "the post that comment \(comment.short) is on is not on this node")
        }
        let signer =
            postAuthor == identity.author ? identity : try await store.ownLogIdentity(postAuthor, of: identity)
        guard let signer else {
            throw StoreError(.notOwner, "only the author of the post can hide a comment on it; this post is not yours")
        }
        let records = try await store.append([.delete(targets: [comment.record])], by: signer)
        await engine.recordsWritten()
        return records[0].id
    }

    /// Blocks an author on this node (``ContinuumStore/block(_:by:)``).
    public func block(_ author: AuthorID, by identity: NodeIdentity) async throws -> (posts: Int, comments: Int) {
        try await store.block(author, by: identity)
    }

    // MARK: Groups

    /// Founds a group; this node is its founder and first admin.
    public func createGroup(name: String, open: Bool, by identity: NodeIdentity) async throws -> GroupID {
        let folded = TextFolding.fold(name.trimmingCharacters(in: .whitespacesAndNewlines))
        if let same = try await store.groups().first(where: {
            $0.name.map { TextFolding.fold($0.trimmingCharacters(in: .whitespacesAndNewlines)) } == folded
        }) {
            throw GroupNameTaken(
                existing: same.id,
                message: "this node is in a group named '\(same.name ?? name)' already (\(same.id.short)); "
                    + "give the new group another name, so that people can tell them apart"
            )
        }
        do {
            let group = try await store.createGroup(name: name, open: open, by: identity)
            await engine.recordsWritten()
            return group
        } catch let error as StoreError where error.code == .invalidRecord || error.code == .invalidInput {
            throw RecordRefused(message: error.message)
        }
    }

    /// A one-time invite to a group this node is an admin of (with no group given, the only such group).
    public func invite(
        to group: GroupID?,
        lifetime: Duration,
        by identity: NodeIdentity
    ) async throws
        -> InviteTicket
    {
        let admin = try await store.groups().filter(\.admin)
        let chosen: GroupID
        if let group {
            chosen = group
        } else if admin.count == 1 {
            chosen = admin[0].id
        } else if admin.isEmpty {
            throw StoreError(
                .notMember,
                "this node is an admin of no group; create one with 'continuum-node group create NAME'"
            )
        } else {
            let names = admin.map { "\($0.name ?? "?") (\($0.id.short))" }.joined(separator: ", ")
            throw StoreError(
                .invalidInput,
                "this node is an admin of \(admin.count) groups; choose one with --group: \(names)"
            )
        }
        return try await store.newInvite(to: chosen, lifetime: lifetime, by: identity)
    }

    /// Removes a member from its group (this node must be an admin there). What the member already holds stays with
    /// it; from now on every member's node refuses its new records and stops syncing the group with it.
    public func revoke(_ log: AuthorID, by identity: NodeIdentity) async throws -> RecordID {
        let record = try await store.removeMember(log, by: identity)
        await engine.recordsWritten()
        return record.id
    }

    /// Removes a device from this node's account (PROTOCOL.md §2.10): its removal, with the frontier of what this
    /// node holds of its logs, goes to every node of the account's groups.
    public func removeDevice(_ device: AuthorID, by identity: NodeIdentity) async throws -> DeviceRemoval {
        let removal = try await store.removeDevice(device, by: identity)
        await engine.recordsWritten()
        return removal
    }

    /// Approves a node's request to join into `group` (this node must be its admin): signs the record that adds it,
    /// which the asker fetches the next time it asks.
    public func approve(_ node: NodeID, into group: GroupID, by identity: NodeIdentity) async throws -> RecordID {
        let record = try await store.approveJoinRequest(node, into: group, by: identity)
        await engine.recordsWritten()
        return record.id
    }

    /// Denies a node's request to join: it is told so the next time it asks.
    public func deny(_ node: NodeID) async throws { try await store.denyJoinRequest(node) }

    // MARK: Who signs

    /// The identity that signs a new post: this node's log key in `group`; with no group given, in the node's only
    /// group. A node in no group signs in its private log: the post stays on this node, shared with nobody.
    public func signer(inGroup group: GroupID?, of identity: NodeIdentity) async throws -> NodeIdentity {
        if let group { return try await store.logIdentity(in: group, of: identity) }
        let groups = try await store.groups()
        switch groups.count {
        case 0: return try await store.privateLog(of: identity)
        case 1: return try await store.logIdentity(in: groups[0].id, of: identity)
        default:
            let names = groups.map { "\($0.name ?? "?") (\($0.id.short))" }.joined(separator: ", ")
            throw StoreError(.invalidInput, "this node is in \(groups.count) groups; choose one with --group: \(names)")
        }
    }

    /// The identity that writes about a post (a comment): this node's log key in the post's group.
    public func signer(forPost post: PostID, of identity: NodeIdentity) async throws -> NodeIdentity {
        guard let group = try await store.group(ofPost: post) else { return try await store.privateLog(of: identity) }
        return try await store.logIdentity(in: group, of: identity)
    }

    /// The identity that changes a record of `author`'s: this node's log key in that log's group (which is
    /// `author` when the record is this node's own).
    public func signer(forAuthor author: AuthorID, of identity: NodeIdentity) async throws -> NodeIdentity {
        guard author != identity.author else { return identity }
        // Its own log, when it is one of this node's (also a removed one, or one of a group left).
        if let own = try await store.ownLogIdentity(author, of: identity) { return own }
        guard let group = try await store.group(ofLog: author) else { return identity }
        return try await store.logIdentity(in: group, of: identity)
    }

    /// Throws ``StoreError`` `.notOwner`, naming the record and its author, unless `identity` wrote it, or another
    /// device of its account did (PROTOCOL.md §4.4).
    public func requireOwner(_ target: ContinuumStore.Target, identity: NodeIdentity) async throws {
        // Compared with this node's log key in the target's group.
        try await requireOwner(target, signer: try await signer(forAuthor: target.author, of: identity))
    }

    /// ``requireOwner(_:identity:)`` with the log key that signs in the target's group, found already.
    private func requireOwner(_ target: ContinuumStore.Target, signer: NodeIdentity) async throws {
        let noun = if case .post = target { "post" } else { "comment" }
        try await store.requireOwner(target.author, of: "\(noun) \(target.record.short)", identity: signer)
    }

    /// Sets `identity`'s display name, which peers see: a Profile record in each of its groups' logs (and, on this
    /// node only, its own name and its private log's profile).
    public func setName(_ name: String, by identity: NodeIdentity) async throws {
        try Self.check(RecordBody.profile(name: name))
        try await store.signName(name, by: identity)
        await engine.recordsWritten()
    }

    // MARK: Follows and notifications

    /// Follows a live post; false when it was followed already (following twice is following once).
    public func follow(_ post: PostID) async throws -> Bool {
        let changed = try await store.follow(post)
        await engine.followsChanged()
        return changed
    }

    /// Stops following a post (deleted or not); false when it was not followed.
    public func unfollow(_ post: PostID) async throws -> Bool {
        let changed = try await store.unfollow(post)
        await engine.followsChanged()
        return changed
    }

    /// Follows the post if it is not followed, and the other way round; returns whether it is followed now.
    public func toggleFollow(_ post: PostID) async throws -> Bool {
        let following = try await store.toggleFollow(post)
        await engine.followsChanged()
        return following
    }

    /// Which notifications to mark read.
    public enum NotificationSelection: Sendable {
        case all
        /// These, all or none: an unknown number is a ``StoreError`` `.notFound` and marks nothing.
        case numbered([Int64])
    }

    /// How many notifications were marked read now, and how many are still unread.
    public struct ReadMarks: Sendable {
        public let marked: Int
        public let unread: Int
    }

    public func markRead(_ selection: NotificationSelection) async throws -> ReadMarks {
        let marked =
            switch selection {
            case .all: try await store.markAllNotificationsRead()
            case .numbered(let ids): try await store.markNotificationsRead(ids)
            }
        return ReadMarks(marked: marked, unread: try await store.unreadNotificationCount())
    }

    // MARK: Helpers

    static func check(_ body: RecordBody) throws(RecordRefused) {
        do {
            try ContinuumStore.check(body)
        } catch {
            throw RecordRefused(message: error.message)
        }
    }

    /// The photo to store and send for `draft`: its own file when its metadata is kept (`keepMetadata`, or
    /// `locationFromPhoto`: the position is in the post anyway) or holds no location; else a copy without the
    /// location, in a temporary file of the store's (`photos/tmp/`), which the caller moves into place or removes.
    func withoutLocation(_ draft: NewPost) async throws -> PhotoSource {
        guard !draft.keepMetadata, !draft.locationFromPhoto else { return draft.photo }
        return try await withoutLocation(draft.photo)
    }

    /// The photo without its location metadata: a new temporary file of the store's, or `source` itself when it
    /// had none.
    private func withoutLocation(_ source: PhotoSource) async throws -> PhotoSource {
        let temp = try store.assets.makeTemporaryFile()
        do {
            guard try await inspector.removeLocation(from: source.url, to: temp) else {
                // Best effort: the copy is not used; left behind, it is swept from photos/tmp once a day old.
                try? FileManager.default.removeItem(at: temp)
                return source
            }
            let contents = try Data(contentsOf: temp)
            return .upload(temp, sha256: AssetHash.of(contents), bytes: UInt64(contents.count))
        } catch {
            // Best effort: `error` is the one reported; a copy left behind is swept from photos/tmp once a day old.
            try? FileManager.default.removeItem(at: temp)
            throw error
        }
    }

    /// Stores a checked photo whose SHA-256 is `hash` and records it as available.
    func keep(_ source: PhotoSource, as hash: AssetHash, bytes: UInt64) async throws {
        try await store.recordPhoto(place(source, as: hash, bytes: bytes))
    }

    /// Places a checked photo whose SHA-256 is `hash`, for the record that shows it to record: a temporary file of
    /// the store's is synced and moved into place, a person's file is copied in first.
    func place(_ source: PhotoSource, as hash: AssetHash, bytes: UInt64) throws -> PlacedPhoto {
        try store.placePhoto(copiedIn(source).url, as: hash, bytes: Int64(bytes))
    }

    /// The photo as a temporary file of the store's, hashed: an upload or a cleaned copy is one already; a person's
    /// own file is copied in, hashed while it is written (``ContinuumStore/writePhoto(_:)``), so that the post's
    /// thumbnail is made while the disk takes the bytes, and the sync before the photo's rename has little to wait.
    func copiedIn(_ source: PhotoSource) throws -> PhotoSource {
        guard case .file(_, let contents) = source else { return source }
        let (file, hash) = try store.writePhoto(contents)
        return .upload(file, sha256: hash, bytes: UInt64(contents.count))
    }

    /// Runs `append` after `photo` was placed for it; when the append fails (the record was refused, or the store
    /// failed), the photo is removed again unless a live post shows it, so that a failed post leaves nothing.
    private func appendKeeping(
        _ photo: AssetHash?,
        _ append: () async throws -> VerifiedRecord
    ) async throws -> VerifiedRecord {
        do {
            return try await append()
        } catch {
            // Best effort: what is left is not counted, served or fetched (no live post shows it), and goes with the
            // next erasure of that photo.
            if let photo { try? await store.dropPhotoIfUnshown(photo) }
            throw error
        }
    }
}

/// A post to be shared: what ``NodeActions/post(_:by:)`` takes.
public struct NewPost: Sendable {
    public var photo: PhotoSource
    public var caption: String
    /// Where the photo was taken, as given. Nil: no location, unless `locationFromPhoto`.
    public var location: Coordinate?
    /// When the photo was taken; nil: its EXIF date taken, if any. (A post's own time is always when it is posted.)
    public var takenAt: Timestamp?
    /// Share the position in the photo's EXIF (``PhotoRefusal/noLocation(_:)`` when it has none); the photo's bytes
    /// are then posted as they are.
    public var locationFromPhoto: Bool
    /// Post the photo's bytes as they are, location metadata included (by default it is removed).
    public var keepMetadata: Bool
    /// Follow the new post (you are then notified of its comments).
    public var autoFollow: Bool
    /// The group it is shared with; nil: the node's only group (or none: then it stays on this node).
    public var group: GroupID?

    public init(
        photo: PhotoSource,
        caption: String,
        location: Coordinate? = nil,
        takenAt: Timestamp? = nil,
        autoFollow: Bool = true,
        locationFromPhoto: Bool = false,
        keepMetadata: Bool = false,
        group: GroupID? = nil
    ) {
        self.group = group
        self.photo = photo
        self.caption = caption
        self.location = location
        self.takenAt = takenAt
        self.locationFromPhoto = locationFromPhoto
        self.keepMetadata = keepMetadata
        self.autoFollow = autoFollow
    }
}

/// What an edit changes in a post: at least one of its caption, photo and location.
public struct PostEdit: Sendable {
    public var caption: String?
    /// A new photo, which replaces the post's (its own file is erased unless another post shows it).
    public var photo: PhotoSource?
    /// When the new photo was taken; nil: its EXIF date taken, if any.
    public var takenAt: Timestamp?
    public var location: PostChange.Location
    /// Post the new photo's bytes as they are, location metadata included (by default it is removed).
    public var keepMetadata: Bool

    public init(
        caption: String? = nil,
        photo: PhotoSource? = nil,
        takenAt: Timestamp? = nil,
        location: PostChange.Location = .unchanged,
        keepMetadata: Bool = false
    ) {
        self.caption = caption
        self.photo = photo
        self.takenAt = takenAt
        self.location = location
        self.keepMetadata = keepMetadata
    }
}

extension NewPost {
    /// The post's location: the one given, else the photo's EXIF position when asked for, else none.
    func sharedLocation(_ inspected: InspectedPhoto) throws(PhotoRefusal) -> Coordinate? {
        if let location { return location }
        guard locationFromPhoto else { return nil }
        guard let found = inspected.location else {
            throw .noLocation("the photo has no GPS position in its metadata to share")
        }
        return found
    }
}

/// Where the photo of a new post is.
public enum PhotoSource: Sendable {
    /// A file of the store's own (`AssetStore.makeTemporaryFile`), hashed while it was written: moved into place.
    case upload(URL, sha256: AssetHash, bytes: UInt64)
    /// A person's own file, read whole (mapped): checked where it is, and copied into the store.
    case file(URL, contents: Data)

    var url: URL {
        switch self {
        case .upload(let url, _, _), .file(let url, _): url
        }
    }

    func hashAndSize() -> (AssetHash, UInt64) {
        switch self {
        case .upload(_, let hash, let bytes): (hash, bytes)
        case .file(_, let contents): (AssetHash.of(contents), UInt64(contents.count))
        }
    }
}
