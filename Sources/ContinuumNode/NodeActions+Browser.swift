import ContinuumCore
import ContinuumStore
import Foundation

/// A photo kept for a post that a linked browser signs itself: what its record commits to.
public struct StagedPhoto: Sendable, Hashable {
    public let photo: PhotoReference
    /// Where it was taken, as the post shares it (given, or from the photo's metadata when asked); nil: nowhere.
    public let location: Coordinate?
}

/// The node's part in a post that a linked browser signs (Docs/WEB.md, "A phone as a device"): the browser sends
/// the photo, the node checks it and keeps it as it keeps its own (location removed unless shared or kept, thumbnail
/// made), and answers what the browser's record must say of it. The browser then signs the post and sends it.
extension NodeActions {
    /// Checks and keeps `draft`'s photo, and its thumbnail, for a record that another key will sign. The caption is
    /// checked as a post's; nothing is signed. A photo kept for a post never sent stays unshown: not served, offered
    /// or counted, as one whose post was deleted.
    public func stage(_ draft: NewPost) async throws -> StagedPhoto {
        let inspected = try await inspector.inspect(file: draft.photo.url)
        let photo = try copiedIn(await withoutLocation(draft))
        // Best effort, as for a post of the node's own: a copy left by a failure is swept from photos/tmp.
        defer { if photo.url != draft.photo.url { try? FileManager.default.removeItem(at: photo.url) } }
        let (hash, bytes) = photo.hashAndSize()
        let thumbnail = await thumbnailToCommit(of: photo.url)
        let reference = inspected.reference(sha256: hash, bytes: bytes, takenAt: draft.takenAt, thumbnail: thumbnail)
        let location = try draft.sharedLocation(inspected)
        try Self.check(.post(caption: draft.caption, photo: reference, location: location))
        try await keep(photo, as: hash, bytes: bytes)
        await keepThumbnail(thumbnail, of: hash)
        return StagedPhoto(photo: reference, location: location)
    }

    /// Stores a record a linked browser signed (``ContinuumStore/storeFromDevice(_:device:autoFollow:)``) and tells
    /// the engine, which offers it to the peers.
    /// A post is followed (the node's person follows what it posts) unless `follow` is false: a guest's post is not
    /// the owner's to follow.
    public func storeSigned(
        _ record: VerifiedRecord,
        device: AuthorID,
        follow: Bool = true
    ) async throws
        -> VerifiedRecord
    {
        let follows = follow && record.header.kind == .post
        let stored = try await store.storeFromDevice(record, device: device, autoFollow: follows)
        await engine.recordsWritten()
        if follows { await engine.followsChanged() }
        return stored
    }
}

/// Guests (Docs/API.md, "Guests"): the store lets them in and out; the engine offers the records to the peers.
extension NodeActions {
    /// ``ContinuumStore/admitGuest(link:proves:founding:log:name:by:)``, then the peers are told.
    public func admitGuest(
        link id: Data,
        proves: @escaping @Sendable (Data) -> Bool,
        founding: VerifiedRecord,
        log: AuthorID,
        name: String,
        by identity: NodeIdentity
    ) async throws -> (group: GroupID, add: VerifiedRecord) {
        let admitted = try await store.admitGuest(
            link: id,
            proves: proves,
            founding: founding,
            log: log,
            name: name,
            by: identity
        )
        await engine.recordsWritten()
        return admitted
    }

    /// ``ContinuumStore/removeGuest(_:block:by:)``, then the peers are told of the removal.
    public func removeGuest(_ device: AuthorID, block: Bool, by identity: NodeIdentity) async throws -> GuestSummary {
        let guest = try await store.removeGuest(device, block: block, by: identity)
        await engine.recordsWritten()
        return guest
    }
}
