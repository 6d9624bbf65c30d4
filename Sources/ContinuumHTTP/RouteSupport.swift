import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird
import NIOCore

// What every set of routes shares (NodeRoutes, PostRoutes, FollowRoutes, PhotoRoutes, GroupRoutes, SettingsRoutes):
// the JSON answer, the mapping of store and record errors to the API's, and the parsing of ids and query parameters.
// Every handler checks its input with these before it touches the store.

/// A JSON answer: `value` encoded as the front ends print it (sorted keys), never cached.
func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
    let data = try JSONEncoder.frontEnd().encode(value)
    return Response(
        status: status,
        headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
        body: .init(byteBuffer: ByteBuffer(bytes: data))
    )
}

/// Runs a store action, answering its ``StoreError`` as the API does (404 `unknown_<noun>`, 403 `not_owner`, …).
func storeCall<T>(noun: String, field: String? = nil, _ action: () async throws -> T) async throws -> T {
    do {
        return try await action()
    } catch let error as StoreError {
        throw APIError.from(error, noun: noun, field: field)
    }
}

/// Runs an action, answering a record that breaks a rule of the format (``RecordRefused``) with 400
/// `invalid_text` on `field`.
func withInvalidText<T>(field: String, _ action: () async throws -> T) async throws -> T {
    do {
        return try await action()
    } catch let error as RecordRefused {
        throw APIError(.badRequest, "invalid_text", error.message, field: field)
    }
}

/// The post the path's `:id` names: its id or the start of it (404 `unknown_post`, 409 `ambiguous_prefix`).
func resolvePost(_ context: BasicRequestContext, in store: ContinuumStore) async throws -> PostID {
    let text = try context.parameters.require("id")
    return try await storeCall(noun: "post") { try await store.resolvePost(text) }
}

/// The post or comment `text` names: its id or the start of it (404 `unknown_<noun>`, 409 `ambiguous_prefix`).
func resolveTarget(_ text: String, noun: String, in store: ContinuumStore) async throws -> ContinuumStore.Target {
    try await storeCall(noun: noun) { try await store.resolveTarget(text) }
}

/// The photo the path's `:sha256` names: 64 hex digits, else 400 `bad_request` on `sha256`.
func photoHash(_ context: BasicRequestContext) throws -> AssetHash {
    let text = try context.parameters.require("sha256")
    guard let hash = AssetHash(hex: text) else {
        throw APIError.badRequest("'\(text)' is not a photo's SHA-256: 64 hex digits", field: "sha256")
    }
    return hash
}

/// `LAT,LON` in decimal degrees, else 400 `bad_location` on `field`.
func coordinate(_ text: String, field: String) throws -> Coordinate {
    guard let coordinate = Coordinate(parsing: text) else {
        throw APIError(
            .badRequest,
            "bad_location",
            "\(field) '\(text)' is not LAT,LON in decimal degrees (latitude -90...90, longitude -180...180)",
            field: field
        )
    }
    return coordinate
}

/// The query's `limit`: a whole number from 1 to 500; `value` when absent.
func limit(_ query: Parameters, default value: Int) throws -> Int {
    guard let text = query.get("limit") else { return value }
    guard let limit = Int(text), (1...500).contains(limit) else {
        throw APIError.badRequest("limit must be a whole number from 1 to 500", field: "limit")
    }
    return limit
}

/// A true-or-false query parameter: `true`, `1` or empty (`?all`) is true; absent, `false` or `0` is false.
func flag(_ query: Parameters, _ name: String) throws -> Bool {
    switch query.get(name) {
    case nil, "false", "0": return false
    case "true", "1", "": return true
    case let other?: throw APIError.badRequest("\(name) must be true or false, not '\(other)'", field: name)
    }
}

extension Request {
    /// The query's parameters as browsers write them (`application/x-www-form-urlencoded`: a form, or
    /// `URLSearchParams`): `+` stands for a space, then percent escapes are decoded, in names and values alike; a
    /// literal plus is `%2B`. Hummingbird's `uri.queryParameters` decodes the escapes alone, so that
    /// `?q=boat+lake` searched for "boat+lake" and found nothing.
    var formQuery: Parameters {
        guard let query = uri.query, !query.isEmpty else { return Parameters() }
        let pairs = query.split(separator: "&").map { pair -> (key: Substring, value: Substring) in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (key: Self.formDecoded(parts[0]), value: parts.count > 1 ? Self.formDecoded(parts[1]) : "")
        }
        return Parameters(pairs)
    }

    /// One name or value of a form-encoded query: `+` as a space, then the percent escapes (left as they are when
    /// they do not decode to UTF-8, as Hummingbird leaves them).
    private static func formDecoded(_ text: Substring) -> Substring {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return Substring(spaced.removingPercentEncoding ?? spaced)
    }
}
