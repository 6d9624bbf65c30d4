import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird

/// Reactions to posts and comments (PROTOCOL.md §2.9): give one, replace it, take it back.
struct ReactionRoutes: Sendable {
    let store: ContinuumStore
    let identity: NodeIdentity
    /// Signs the reaction records.
    let actions: NodeActions

    /// Adds the reaction routes to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        for noun in ["post", "comment"] {
            api.put("\(noun)s/:id/reaction") { request, context in
                try await react(request, context: context, noun: noun)
            }
            api.delete("\(noun)s/:id/reaction") { _, context in
                try await unreact(context, noun: noun)
            }
        }
    }

    struct ReactionBody: Decodable { let reaction: String? }

    /// What a reaction route answers: the record reacted to, this node's reaction now and everyone's counts.
    struct Reacted: Encodable {
        let target: String
        @Nullable var myReaction: String?
        let reactions: [ReactionCountJSON]
    }

    /// `PUT /api/posts/ID/reaction` or `/api/comments/ID/reaction` with `{"reaction": "heart"}` (a name or the emoji).
    func react(_ request: Request, context: BasicRequestContext, noun: String) async throws -> Response {
        let target = try await target(context, noun: noun)
        let body = try await request.decodeJSON(as: ReactionBody.self, context: context)
        guard let typed = body.reaction, let emoji = ReactionEmoji(typed: typed) else {
            let choices = ReactionEmoji.shown.map(\.name).joined(separator: ", ")
            throw APIError(
                .badRequest,
                "unknown_reaction",
                "'\(body.reaction ?? "")' is not a reaction; send one of \(choices) (or its emoji)",
                field: "reaction"
            )
        }
        _ = try await storeCall(noun: noun) { try await actions.react(to: target, with: emoji, by: identity) }
        return try await answer(target)
    }

    /// `DELETE …/reaction`: takes this node's reaction back; nothing is signed when there is none.
    func unreact(_ context: BasicRequestContext, noun: String) async throws -> Response {
        let target = try await target(context, noun: noun)
        if try await store.reactions(to: target.record, viewer: identity.author).mine != nil {
            _ = try await storeCall(noun: noun) { try await actions.react(to: target, with: .none, by: identity) }
        }
        return try await answer(target)
    }

    private func target(_ context: BasicRequestContext, noun: String) async throws -> ContinuumStore.Target {
        let text = try context.parameters.require("id")
        let target = try await resolveTarget(text, noun: noun, in: store)
        switch (target, noun) {
        case (.post, "post"), (.comment, "comment"): return target
        default: throw APIError(.notFound, "unknown_\(noun)", "no \(noun) matches '\(text)'")
        }
    }

    private func answer(_ target: ContinuumStore.Target) async throws -> Response {
        let counts = try await store.reactions(to: target.record, viewer: identity.author)
        return try json(
            Reacted(target: target.record.hex, myReaction: counts.mine?.name, reactions: ReactionCountJSON.list(counts))
        )
    }
}

extension ReactionRoutes {
    init(_ services: APIServices) {
        self.init(store: services.store, identity: services.identity, actions: services.actions)
    }
}
