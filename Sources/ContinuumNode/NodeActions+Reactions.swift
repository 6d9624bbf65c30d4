import ContinuumCore
import ContinuumStore
import Foundation

extension NodeActions {
    /// Reacts to a live post or comment with one of the fixed reactions, replacing this node's earlier reaction to it,
    /// or takes that reaction back (`.none`): a reaction record (PROTOCOL.md §2.9) in the post's group, which goes
    /// with the post when its author deletes it.
    public func react(
        to target: ContinuumStore.Target,
        with emoji: ReactionEmoji,
        by identity: NodeIdentity
    ) async throws -> RecordID {
        let reaction: Reaction
        switch target {
        case .post(let post, _):
            reaction = Reaction(post: post, emoji: emoji)
        case .comment(let comment, _):
            guard let post = try await store.post(ofComment: comment) else {
                throw StoreError(.notFound, "comment \(comment.short) or its post is not on this node any more")
            }
            reaction = Reaction(post: post, comment: comment, emoji: emoji)
        }
        try Self.check(reaction.body)
        let signer = try await signer(forPost: reaction.post, of: identity)
        // After this log's last reaction to it, so that the new one replaces it even within the same millisecond or
        // after the clock stepped back (the latest by created-at counts).
        let last = try await store.latestReaction(by: signer.author, to: reaction.target)
        let now = Timestamp.now()
        let createdAt = last.map { Timestamp(milliseconds: max(now.milliseconds, $0.milliseconds + 1)) } ?? now
        let record = try await store.append(reaction.body, createdAt: createdAt, by: signer)
        await engine.recordsWritten()
        return record.id
    }
}
