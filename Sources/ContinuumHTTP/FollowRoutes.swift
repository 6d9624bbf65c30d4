import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird

/// Follows and the notifications they bring.
struct FollowRoutes: Sendable {
    let store: ContinuumStore
    /// Every write: follows and notifications read.
    let actions: NodeActions

    /// Adds the follow and notification routes to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        api.put("posts/:id/follow") { _, context in try await follow(context, on: true) }
        api.delete("posts/:id/follow") { _, context in try await follow(context, on: false) }
        api.post("posts/:id/follow/toggle") { _, context in try await follow(context, on: nil) }
        api.get("following") { _, _ in
            try json(["posts": try await store.following().map(FollowedPostJSON.init)])
        }
        api.get("notifications") { request, _ in try await notifications(request) }
        api.post("notifications/read") { request, context in try await markRead(request, context: context) }
    }

    struct Following: Encodable {
        let post: String
        let following: Bool
    }

    /// Follows (true), unfollows (false) or toggles (nil) a post.
    func follow(_ context: BasicRequestContext, on: Bool?) async throws -> Response {
        let post = try await resolvePost(context, in: store)
        let following: Bool
        switch on {
        case true?:
            _ = try await actions.follow(post)
            following = true
        case false?:
            _ = try await actions.unfollow(post)
            following = false
        case nil:
            following = try await actions.toggleFollow(post)
        }
        return try json(Following(post: post.hex, following: following))
    }

    struct NotificationList: Encodable {
        let notifications: [NotificationJSON]
        let unread: Int
    }

    /// `GET /api/notifications`: the newest first, `?unread=true` for the unread ones only.
    func notifications(_ request: Request) async throws -> Response {
        let query = request.formQuery
        let list = try await store.notifications(
            unreadOnly: try flag(query, "unread"),
            limit: try limit(query, default: 50)
        )
        return try json(
            NotificationList(
                notifications: list.map(NotificationJSON.init),
                unread: try await store.unreadNotificationCount()
            )
        )
    }

    struct MarkReadBody: Decodable {
        let ids: [Int64]?
        let all: Bool?
    }

    /// `POST /api/notifications/read`: the notifications numbered, or all of them.
    func markRead(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: MarkReadBody.self, context: context)
        let marks: NodeActions.ReadMarks
        switch (body.ids, body.all) {
        case (nil, true?):
            marks = try await actions.markRead(.all)
        case (let ids?, nil) where !ids.isEmpty, (let ids?, false?) where !ids.isEmpty:
            marks = try await storeCall(noun: "notification", field: "ids") {
                try await actions.markRead(.numbered(ids))
            }
        default:
            throw APIError.badRequest("send {\"ids\": [numbers]} or {\"all\": true}", field: "ids")
        }
        return try json(ReadMarksJSON(marks))
    }
}

extension FollowRoutes {
    /// The follow routes over the parts of `services` they use.
    init(_ services: APIServices) {
        self.init(store: services.store, actions: services.actions)
    }
}
