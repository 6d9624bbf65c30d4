import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumTestSupport
import Foundation
import Testing

/// Places, offline, through the API: a post's `place`, `GET /api/places`, and a city's name as the feed's `near`,
/// in-process (``InProcessAPI``). Expected places are the atlas's.
@Suite("HTTP API: places by position and by name, offline")
struct PlaceTests {
    /// Posts in Paris and in Stockholm, and one with no location; their ids.
    func prepare(_ api: InProcessAPI) async throws -> (paris: PostID, stockholm: PostID, nowhere: PostID) {
        let lake = NodeBinary.fixtures.appendingPathComponent("lake.png")
        func post(_ caption: String, _ latitude: Double?, _ longitude: Double?) async throws -> PostID {
            let location = latitude.flatMap { latitude in
                longitude.flatMap { Coordinate(latitude: latitude, longitude: $0) }
            }
            return try await api.actions.post(
                NewPost(photo: .file(lake, contents: try Data(contentsOf: lake)), caption: caption, location: location),
                by: api.node.identity
            )
        }
        return (
            try await post("Louvre", 48.8606, 2.3376), try await post("Gamla stan", 59.3251, 18.0711),
            try await post("Somewhere", nil, nil)
        )
    }

    @Test("a post's view names the city nearest its location; a post without one has no place")
    func postPlace() async throws {
        try await InProcessAPI.with { api in
            let posts = try await prepare(api)
            let paris = try await api.get("/api/posts/\(posts.paris.hex)")
            let place = try #require(paris.object["place"] as? [String: Any], "\(paris.text)")
            #expect(place["name"] as? String == "Paris" && place["country"] as? String == "France", "\(place)")
            #expect(place["countryCode"] as? String == "FR")
            #expect((place["distanceKm"] as? Double ?? 99) < 3, "\(place)")
            let stockholm = try await api.get("/api/posts/\(posts.stockholm.hex)").object["place"] as? [String: Any]
            #expect(stockholm?["name"] as? String == "Stockholm" && stockholm?["country"] as? String == "Sweden")
            #expect(try await api.get("/api/posts/\(posts.nowhere.hex)").object["place"] == nil)
            // Lists carry no place: only the post's own view does.
            let feed = try await api.get("/api/feed").object["posts"] as? [[String: Any]] ?? []
            #expect(feed.count == 3 && feed.allSatisfy { $0["place"] == nil })
        }
    }

    @Test("GET /api/places?q= finds cities by name, most populous first; near= takes a city's name")
    func byName() async throws {
        try await InProcessAPI.with { api in
            let posts = try await prepare(api)
            let found = try await api.get("/api/places?q=paris&limit=2")
            #expect(found.status == 200, "\(found.text)")
            let places = try #require(found.object["places"] as? [[String: Any]], "\(found.text)")
            #expect(places.count == 2 && places.first?["name"] as? String == "Paris", "\(places)")
            #expect(places.first?["country"] as? String == "France")
            #expect((try await api.get("/api/places?q=xyzzyville").object["places"] as? [Any])?.isEmpty == true)

            let near = try await api.get("/api/feed?near=Paris&radiusKm=20")
            #expect(near.status == 200, "\(near.text)")
            let ids = (near.object["posts"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(ids == [posts.paris.hex], "\(near.text)")
        }
    }

    @Test(
        "a place that is not one: 400 with what to send, and the node goes on",
        arguments: [
            ("/api/places", 400, "bad_request", "q=NAME"),
            ("/api/places?q=+", 400, "bad_request", "q=NAME"),
            ("/api/places?q=paris&limit=51", 400, "bad_request", "1 to 50"),
            ("/api/feed?near=Xyzzyville", 400, "bad_location", "nor the name of a city"),
            ("/api/feed?near=91,0", 400, "bad_location", "neither LAT,LON"),
        ]
    )
    func refused(_ path: String, _ status: Int, _ code: String, _ words: String) async throws {
        try await InProcessAPI.with { api in
            let response = try await api.get(path)
            #expect(response.status == status && response.errorCode == code, "\(response.text)")
            #expect(response.errorMessage.contains(words), "\(response.text)")
            #expect(try await api.get("/api/places?q=oslo").status == 200)
        }
    }
}
