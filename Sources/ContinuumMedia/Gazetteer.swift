import CGeonames
import ContinuumCore
import Foundation
import Synchronization

/// A city of the GeoNames gazetteer.
public struct Place: Sendable, Hashable {
    public let name: String
    /// The region (a state, a province), when GeoNames names one.
    public let region: String?
    public let country: String
    /// ISO 3166-1 alpha-2, `FR`.
    public let countryCode: String
    public let coordinate: Coordinate
    public let population: Int

    /// "Paris, France".
    public var title: String { "\(name), \(country)" }
}

/// Places, offline: the cities of GeoNames as Debian packages them (libgeonames: about 24,000 cities of 15,000 people
/// or more, with their region, country and position), for where a photo was taken (the nearest city) and for a place
/// typed by its name ("near Paris"). Their positions are read on first use (tens of ms of one core) and held, as
/// points on the unit sphere; a city's names are read from libgeonames when it is the answer. Credit: GeoNames
/// (geonames.org), CC BY 4.0.
public final class Gazetteer: Sendable {
    /// The cities' positions, once read (nil until the first lookup).
    private let table = Mutex<Points?>(nil)

    /// Each city's position as a point on the unit sphere, in libgeonames' order, in three arrays side by side: the
    /// nearest city to a position is the one whose point has the largest dot product with the position's
    /// (great-circle order, with three multiplications a city and no trigonometry).
    private struct Points {
        var x: [Double] = []
        var y: [Double] = []
        var z: [Double] = []
    }

    public init() {}

    /// The city nearest to `coordinate`, and its distance in km; nil only when the gazetteer holds no city.
    public func nearest(to coordinate: Coordinate) -> (place: Place, distanceKm: Double)? {
        let points = self.points()
        let target = Self.point(coordinate)
        var best = -Double.infinity
        var index = -1
        for city in points.x.indices {
            let dot = points.x[city] * target.x + points.y[city] * target.y + points.z[city] * target.z
            if dot > best {
                best = dot
                index = city
            }
        }
        guard index >= 0, let place = Self.place(at: index) else { return nil }
        return (place, Self.distanceKm(coordinate, place.coordinate))
    }

    /// `LAT,LON` in decimal degrees, or the position of the most populous city named `text`; nil when it is neither.
    /// Text of digits, signs, dots, commas and spaces alone is read as `LAT,LON` only (``looksLikeNumbers(_:)``).
    public func coordinate(of text: String) -> Coordinate? {
        if let coordinate = Coordinate(parsing: text) { return coordinate }
        guard !Self.looksLikeNumbers(text) else { return nil }
        return find(text, limit: 1).first?.coordinate
    }

    /// Whether `text` is meant as numbers (a mistyped `LAT,LON`), not as a place's name.
    public static func looksLikeNumbers(_ text: String) -> Bool {
        text.allSatisfy { "0123456789.,+- ".contains($0) }
    }

    /// The cities whose name matches `name` (GeoNames' own matching: case and accents aside, also the start of a
    /// name), the most populous first; at most `limit`.
    public func find(_ name: String, limit: Int = 10) -> [Place] {
        let text = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return [] }
        var count: guint = 0
        guard let indices = geonames_query_cities_sync(text, GEONAMES_QUERY_DEFAULT, &count, nil, nil) else {
            return []
        }
        defer { g_free(indices) }
        let found = (0..<Int(count)).compactMap { Self.place(at: Int(indices[$0])) }
        return Array(found.sorted { $0.population > $1.population }.prefix(limit))
    }

    /// Every city's position, read from libgeonames on first use.
    private func points() -> Points {
        table.withLock { held in
            if let held { return held }
            var points = Points()
            let count = Int(geonames_get_n_cities())
            for index in 0..<count {
                guard let city = geonames_get_city(gint(index)) else {
                    // Kept in its place, so that the indices stay libgeonames' own; NaN is never the nearest.
                    points.x.append(.nan)
                    points.y.append(.nan)
                    points.z.append(.nan)
                    continue
                }
                defer { geonames_city_free(city) }
                let point = Self.point(
                    latitude: geonames_city_get_latitude(city),
                    longitude: geonames_city_get_longitude(city)
                )
                points.x.append(point.x)
                points.y.append(point.y)
                points.z.append(point.z)
            }
            held = points
            return points
        }
    }

    /// The city at `index` in libgeonames' order (the indices its queries answer with), or nil.
    private static func place(at index: Int) -> Place? {
        guard index >= 0, index < Int(geonames_get_n_cities()), let city = geonames_get_city(gint(index)) else {
            return nil
        }
        defer { geonames_city_free(city) }
        func text(_ value: UnsafePointer<gchar>?) -> String { value.map { String(cString: $0) } ?? "" }
        let region = text(geonames_city_get_state(city))
        guard
            let coordinate = Coordinate(
                latitude: geonames_city_get_latitude(city),
                longitude: geonames_city_get_longitude(city)
            )
        else { return nil }
        return Place(
            name: text(geonames_city_get_name(city)),
            region: region.isEmpty ? nil : region,
            country: text(geonames_city_get_country(city)),
            countryCode: text(geonames_city_get_country_code(city)),
            coordinate: coordinate,
            population: Int(geonames_city_get_population(city))
        )
    }

    /// A position as a point on the unit sphere.
    static func point(_ coordinate: Coordinate) -> (x: Double, y: Double, z: Double) {
        point(latitude: coordinate.latitude, longitude: coordinate.longitude)
    }

    static func point(latitude: Double, longitude: Double) -> (x: Double, y: Double, z: Double) {
        let latitude = latitude * Double.pi / 180
        let longitude = longitude * Double.pi / 180
        return (cos(latitude) * cos(longitude), cos(latitude) * sin(longitude), sin(latitude))
    }

    /// The great-circle distance in km (haversine, mean Earth radius).
    static func distanceKm(_ a: Coordinate, _ b: Coordinate) -> Double {
        let radians = Double.pi / 180
        let dLatitude = (b.latitude - a.latitude) * radians
        let dLongitude = (b.longitude - a.longitude) * radians
        let s =
            pow(sin(dLatitude / 2), 2) + cos(a.latitude * radians) * cos(b.latitude * radians)
            * pow(sin(dLongitude / 2), 2)
        return 2 * 6371.0088 * asin(min(1, s.squareRoot()))
    }
}
