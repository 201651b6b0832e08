"""Synthetic chat memories for the latency and overhead benchmarks.

Not a script: ``latency.py`` and ``overhead.py`` import it. It makes chat sessions between
a user and an assistant that read like what a memory layer stores: people (family,
friends, colleagues), places, pets, jobs, dates, preferences and events, 8 to 30 words a
message, with a vocabulary of a few thousand words so that BM25 postings are shaped like
real text (a long tail of rare words and a few very common ones), not a 40-word toy.

Every user (``entity_id``) has a persona: a name, a partner, relatives, friends,
colleagues, pets, a home town, a job and an employer. A session talks about one or two
entities of that persona (chosen with Zipf-like weights, so a partner is mentioned far
more often than a cousin) or of a shared pool (cities, restaurants, bands...), and those
entity names are passed to ``Memory.add(..., entities=...)`` as the session's entities,
as an extracting model would tag them. Many user messages state a fact and carry a
question phrased from it ("Where did my sister Ines move to?"), used as recall queries.

Everything is deterministic for a seed; a user's stream of messages is the same whatever
its length, so a small store is a prefix of a large one (and embeddings can be reused).

Example:
    >>> stream = UserStream("user-00", seed=1)
    >>> messages = stream.take(40)
    >>> len(messages), all(8 <= len(m.text.split()) <= 30 for m in messages)
    (40, True)
    >>> stream.take(40) == messages
    True
"""

# ruff: noqa: SIM905
# (word lists are kept as split strings: one word per line would run to 1,000 lines)
from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

__all__ = ["Message", "Persona", "UserStream", "corpus_vocabulary"]

FIRST_NAMES = """Ada Adele Aiko Alba Alec Alma Amara Amir Anders Anika Anton Arjun
Astrid Aurelio Ayla Bao Basil Beatriz Bella Benedikt Bianca Bilal Bjorn Blanca Bruno
Camila Carmen Cassius Celeste Chiara Chidi Clara Colm Cosima Dalia Damian Dara Dmitri
Dolores Edgar Efua Elif Elio Emeka Emil Enzo Esme Esther Ezra Fabian Farah Felix Fenna
Finn Flora Freya Gaspard Gemma Gideon Greta Hana Hamid Harriet Hugo Idris Ilse Imani
Ines Ingrid Isak Ivo Jada Jasper Javier Jonas Juno Kai Kalani Karim Kasia Keanu Kenji
Kiara Kofi Lale Lars Leila Lena Leon Linnea Lior Lorenzo Lucia Luka Lydia Mads Mai
Malik Marek Margot Mateo Maya Mei Milan Mira Moana Nadia Nico Nils Noor Nora Oisin
Olga Omar Oona Oskar Paloma Pavel Petra Priya Quentin Rafael Rania Rhea Rosa Rumi
Saoirse Sami Santiago Selma Sven Tamar Tariq Tess Theo Tomas Ulla Uma Valentina Vera
Viggo Wanda Wren Xavier Yara Yusuf Zainab Zora""".split()

CITIES = """Aarhus Accra Adelaide Alicante Amsterdam Antwerp Athens Auckland Austin
Barcelona Basel Belfast Bergen Berlin Bilbao Bologna Bordeaux Boston Bratislava
Brighton Bristol Bruges Brussels Budapest Cadiz Cairo Cardiff Chicago Cologne
Copenhagen Cork Dakar Delft Denver Dresden Dublin Dundee Durban Edinburgh Florence
Galway Gdansk Geneva Genoa Ghent Glasgow Gothenburg Granada Graz Hamburg Hanoi
Helsinki Hobart Innsbruck Istanbul Kyoto Lagos Leeds Leipzig Lille Lima Lisbon
Ljubljana Lyon Madrid Malaga Manchester Marseille Melbourne Milan Montreal Munich
Nairobi Nantes Naples Nice Oaxaca Osaka Oslo Ottawa Oxford Palermo Porto Prague Quebec
Reykjavik Riga Rotterdam Salzburg Seattle Seville Sofia Split Stockholm Tallinn
Tbilisi Toronto Toulouse Trieste Turin Utrecht Valencia Vancouver Venice Vienna
Vilnius Warsaw Wellington Zagreb Zurich""".split()

PET_NAMES = """Apollo Bagel Biscuit Bramble Clementine Cocoa Dumpling Fig Ginger Hazel
Juniper Kiwi Loki Luna Mango Maple Miso Mochi Nacho Noodle Nutmeg Olive Otis Pepper
Pickles Pip Pixel Poppy Pumpkin Rufus Saffron Sesame Sprout Sushi Taco Tofu Truffle
Waffle Wasabi Ziggy""".split()

BREEDS = """greyhound beagle labrador dachshund spaniel terrier collie poodle whippet
husky corgi schnauzer boxer pug retriever shepherd tabby siamese persian ragdoll
bengal sphynx rabbit hamster parrot budgie tortoise ferret gecko""".split()

JOBS = """accountant, architect, baker, barista, biologist, bookkeeper,
carpenter, chemist, chef, cartographer, civil engineer, copywriter,
dentist, designer, economist, editor, electrician, firefighter, florist,
gardener, geologist, historian, illustrator, interpreter, journalist,
lawyer, librarian, machinist, mechanic, midwife, musician, nurse,
optician, paramedic, pharmacist, photographer, physiotherapist, pilot,
plumber, potter, professor, programmer, psychologist, radiographer,
researcher, sculptor, surveyor, tailor, teacher, translator, veterinarian,
welder, winemaker, zookeeper""".replace("\n", " ").split(", ")

COMPANIES = """Alderwood Analytics, Blue Heron Logistics, Brightwater Labs, Cobalt Bakery,
Copperleaf Studio, Driftwood Press, Ember Robotics, Fernhill Clinic, Foxglove Architects,
Granite Health, Harbourline Shipping, Hollowtree Games, Ironbark Insurance, Juniper Bank,
Kestrel Aviation, Lanternfish Media, Larkspur School, Meadowlark Farms, Moonstone Bistro,
Northwind Energy, Oakridge Hospital, Orchard Software, Pinecone Publishing, Quarry Lane
Brewing, Redwood Legal, Riverbend Library, Saltmarsh Research, Silverline Rail, Stonefruit
Foods, Sunbeam Solar, Thistle Textiles, Tidewater Museum, Willowbrook Vets, Wrenfield
Consulting""".replace("\n", " ").split(", ")

RESTAURANTS = """Casa Lupa, The Green Fig, Sakura Garden, Trattoria Nonna, El Farolito, Blue
Lotus, The Copper Kettle, Maison Colette, Taverna Kostas, Saffron House, The Salty Pelican,
Pho Saigon, Little Havana, The Hungry Bear, Osteria del Ponte, Mama Ngozi, The Olive Tree,
Bombay Spice, Noodle Bar Kenji, La Petite Boulangerie""".replace("\n", " ").split(", ")

FOODS = """almonds anchovies artichokes asparagus aubergine avocado bagels baklava
blueberries brioche broccoli brownies burritos cashews cauliflower ceviche cheesecake
chickpeas chorizo churros clams coconut couscous croissants curry dates dumplings
eggplant falafel figs gnocchi goulash gyoza halloumi hummus kimchi lasagne lentils
lobster mackerel mangoes miso mussels noodles olives oysters paella pancakes papaya
peanuts pesto pierogi pistachios polenta pomegranate ramen ravioli risotto salmon
sardines sauerkraut scallops shellfish shrimp sourdough spinach strawberries sushi
tacos tahini tempeh tiramisu tofu tortillas truffles walnuts""".split()

DRINKS = """espresso oolong matcha chai kombucha lemonade cider rooibos cortado mezcal
sake prosecco stout lager riesling malbec""".split()

HOBBIES = """archery baking birdwatching bouldering calligraphy ceramics chess
climbing crochet cycling dancing embroidery fencing fishing gardening hiking juggling
kayaking knitting painting photography pottery quilting rowing running sailing
sketching skiing snorkelling surfing swimming tango tennis volleyball weaving
woodworking yoga""".split()

INSTRUMENTS = """piano cello violin ukulele trumpet saxophone drums harp flute
clarinet banjo accordion mandolin guitar""".split()

BANDS = """The Lumineers, Fleetwood Mac, Radiohead, Bon Iver, Khruangbin, Arctic Monkeys,
Florence and the Machine, Tame Impala, Fleet Foxes, Vampire Weekend, The National, Beirut,
Portishead, Massive Attack, Nick Cave""".replace("\n", " ").split(", ")

RELATIONS = """sister brother mother father cousin aunt uncle grandmother grandfather
niece nephew daughter son stepbrother godmother""".split()
FRIEND_ROLES = ["friend", "neighbour", "roommate", "flatmate", "classmate", "teammate"]
WORK_ROLES = ["manager", "colleague", "boss", "mentor", "intern", "client"]

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WHEN = """last week, last weekend, last month, two weeks ago, yesterday,
in the spring, over the summer, last autumn, this winter, a few days ago,
back in {month}, on {weekday}, at the start of {month}, in early {month},
around {month} {day}""".replace("\n", " ").split(", ")

ADJECTIVES = """amazing awkward beautiful bittersweet boring brilliant calm chaotic
charming chilly cosy crowded delightful dusty exhausting fantastic frustrating gloomy
gorgeous hectic hilarious humid lively lovely magical messy moving noisy overwhelming
peaceful quiet relaxing rewarding rough scary silly sunny surreal tense thrilling
tiring unexpected windy wonderful""".split()

FEELINGS = """anxious calm cheerful confident curious delighted disappointed drained
excited grateful guilty homesick hopeful impatient inspired lonely nervous nostalgic
overwhelmed proud relieved restless stressed thrilled tired worried""".split()

OBJECTS = """backpack, bicycle, blender, bookshelf, camera, candle,
ceramic bowl, cookbook, desk lamp, diary, easel, fountain pen, guitar
case, hammock, headphones, jigsaw puzzle, kettle, kite, lantern, laptop,
microscope, notebook, novel, paddleboard, plant pot, poster, printer,
raincoat, record player, rug, scarf, sewing machine, sketchbook, sleeping
bag, snowboard, sunglasses, telescope, tent, thermos, toolbox, typewriter,
umbrella, vase, watch, wetsuit, yoga mat""".replace("\n", " ").split(", ")

EVENT_LIST = """wedding, birthday party, housewarming, graduation,
concert, festival, marathon, conference, reunion, retirement party, baby
shower, book launch, art exhibition, jazz night, pub quiz, farmers market,
bake sale, charity run, chess tournament, open mic night, film screening""".replace(
    "\n", " "
).split(", ")

TOWN_PLACE_LIST = """bakery, library, swimming pool, climbing gym,
community garden, flea market, train station, bookshop, museum, cinema,
pottery studio, dog park, hospital, harbour, botanical garden, ice rink,
vet clinic, town hall, allotment, laundrette""".replace("\n", " ").split(", ")

TAILS = """and honestly it made my whole week, which I did not expect at
all, even though the weather was terrible, so I am still a bit sore today,
and I want to do it again soon, but the traffic on the way back was awful,
because the tickets were half price, and we ended up talking until
midnight, though I forgot my phone charger at home, and the kids loved
every minute of it, so I need to remember to write it down, and now I
cannot stop thinking about it, which reminded me of our trip years ago,
but I was too nervous to say anything, and the food afterwards was the
best part, so we booked the same place for next year, even if my knee
complained the next morning, and someone took a great photo of us, but the
queue was ridiculously long, because it was raining all afternoon, after a
very long week at work, while the neighbours were renovating their
kitchen, and I finally felt like myself again, though it cost more than we
planned, and I promised to send everyone the recipe, because my sister
insisted on coming along, so my budget for the month is gone, and the dog
slept the whole way home, which is typical for that time of year, and I
learned a lot about patience""".replace("\n", " ").split(", ")

ASSISTANT_OPENERS = [
    "That sounds {adj}.",
    "Oh, how {adj}!",
    "I'm glad you told me.",
    "Thanks for sharing that.",
    "Noted, I'll remember that.",
    "That must have felt {feeling}.",
    "What a {adj} story.",
    "Good to know.",
]
ASSISTANT_FOLLOWUPS = [
    "How is {name} doing with all of it?",
    "Would you like a reminder before {event}?",
    "Did {name} enjoy it as much as you did?",
    "Do you want me to keep track of that for {month}?",
    "What was the best part for you?",
    "Are you planning to go back to {city} sometime?",
    "How did you feel about it afterwards?",
    "Shall I suggest a few ideas for next time?",
    "Was it your first time trying {hobby}?",
    "Is there anything you want to prepare before {weekday}?",
]


TOPIC_TAILS = [
    "and we ended up discussing {t1} and {t2}",
    "though mostly we argued over {t1}",
    "and somehow the conversation turned to {t1} and {t2}",
    "plus a long story involving {t1}",
    "and {name} kept bringing up {t1}",
    "which led to a debate on {t1}, {t2} and {t3}",
    "and {name} mentioned {t1} twice",
    "while I was thinking of {t1} the whole time",
    "then {t1} came up again",
    "and I still have questions about {t1}",
]
ASSISTANT_TOPICS = [
    "And what did {name} think of the {topic}?",
    "Was the {topic} part of it?",
    "Tell me more about the {topic}.",
    "I remember you mentioned {topic} before.",
    "How does the {topic} fit in?",
]


@functools.cache
def topic_words() -> tuple[list[str], list[float]]:
    """English words in frequency order, with Zipf cumulative weights for sampling.

    The words are the whole-word entries of the MiniLM WordPiece vocabulary (about 20k,
    ordered roughly by corpus frequency), so sampled topics give BM25 postings with a
    realistic long tail. Empty when the tokenizer file is not installed.
    """
    try:
        from memtrellis.embeddings.minilm import _packaged_tokenizer_path

        vocab = json.loads(_packaged_tokenizer_path().read_text(encoding="utf-8"))
    except Exception:  # the word lists above still make a usable corpus
        return [], []
    ranked = sorted(vocab["model"]["vocab"].items(), key=lambda kv: kv[1])
    words = [w for w, i in ranked if i >= 2100 and w.isalpha() and w.isascii() and len(w) >= 4]
    weights = list(itertools.accumulate(1.0 / (rank + 20) for rank in range(len(words))))
    return words, weights


@dataclass(frozen=True)
class Message:
    """One chat message of the stream (``question`` set when it states a fact)."""

    id: str
    role: str
    text: str
    timestamp: datetime
    session: int
    entities: tuple[str, ...]
    question: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The message as ``Memory.add`` takes it."""
        return {
            "role": self.role,
            "content": self.text,
            "id": self.id,
            "timestamp": self.timestamp.isoformat(),
        }


@dataclass
class Persona:
    """The people, pets and places one user talks about."""

    name: str
    partner: str
    relatives: list[tuple[str, str]]  # (relation, name)
    friends: list[tuple[str, str]]
    colleagues: list[tuple[str, str]]
    pets: list[tuple[str, str]]  # (name, breed)
    home: str
    job: str
    employer: str
    weights: list[tuple[str, str, float]] = field(default_factory=list)  # kind, name, w

    @classmethod
    def make(cls, rng: random.Random) -> Persona:
        names = rng.sample(FIRST_NAMES, 14)
        persona = cls(
            name=names[0],
            partner=names[1],
            relatives=[(rng.choice(RELATIONS), n) for n in names[2:6]],
            friends=[(rng.choice(FRIEND_ROLES), n) for n in names[6:10]],
            colleagues=[(rng.choice(WORK_ROLES), n) for n in names[10:13]],
            pets=[(p, rng.choice(BREEDS)) for p in rng.sample(PET_NAMES, 2)],
            home=rng.choice(CITIES),
            job=rng.choice(JOBS),
            employer=rng.choice(COMPANIES),
        )
        # Zipf-like attention: the partner and first pet come up far more than a cousin.
        people = [("partner", persona.partner)]
        people += [("relative", n) for _, n in persona.relatives]
        people += [("friend", n) for _, n in persona.friends]
        people += [("colleague", n) for _, n in persona.colleagues]
        people += [("pet", n) for n, _ in persona.pets]
        rest = people[1:]
        rng.shuffle(rest)
        people = people[:1] + rest
        persona.weights = [(k, n, 1.0 / (rank + 2)) for rank, (k, n) in enumerate(people)]
        return persona

    def relation_of(self, name: str) -> str:
        """How the user names this person ("my sister Ines", "Ines")."""
        if name == self.partner:
            return "my partner"
        for group in (self.relatives, self.friends, self.colleagues):
            for relation, other in group:
                if other == name:
                    return f"my {relation}"
        return ""


Template = Callable[[random.Random, "_Ctx"], tuple[str, str | None]]


@dataclass
class _Ctx:
    persona: Persona
    person: str
    pet: tuple[str, str]
    city: str

    def fill(self, rng: random.Random, text: str) -> str:
        return text.format(
            name=self.person,
            rel=self.persona.relation_of(self.person) or "my friend",
            pet=self.pet[0],
            breed=self.pet[1],
            city=self.city,
            home=self.persona.home,
            job=self.persona.job,
            employer=self.persona.employer,
            adj=rng.choice(ADJECTIVES),
            feeling=rng.choice(FEELINGS),
            food=rng.choice(FOODS),
            drink=rng.choice(DRINKS),
            hobby=rng.choice(HOBBIES),
            instrument=rng.choice(INSTRUMENTS),
            band=rng.choice(BANDS),
            obj=rng.choice(OBJECTS),
            event=rng.choice(EVENT_LIST),
            place=rng.choice(TOWN_PLACE_LIST),
            restaurant=rng.choice(RESTAURANTS),
            company=rng.choice(COMPANIES),
            other_job=rng.choice(JOBS),
            month=rng.choice(MONTHS),
            weekday=rng.choice(WEEKDAYS),
            day=rng.randint(1, 28),
            when=rng.choice(WHEN).format(
                month=rng.choice(MONTHS), weekday=rng.choice(WEEKDAYS), day=rng.randint(1, 28)
            ),
            number=rng.randint(2, 40),
        )


# (statement, question) pairs; the question is phrased from the statement's facts.
_FACTS: list[tuple[str, str | None]] = [
    ("{rel} {name} moved to {city} {when} to work as a {other_job}", "Where did {name} move to?"),
    (
        "{name} is allergic to {food}, so we always check the menu first",
        "What is {name} allergic to?",
    ),
    (
        "{name}'s birthday is on {month} {day} and I want to get them a {obj}",
        "When is {name}'s birthday?",
    ),
    ("We adopted {pet}, a {breed}, from the shelter {when}", "When did we adopt {pet}?"),
    ("{pet} the {breed} hates the vacuum cleaner but loves the {place}", "What does {pet} love?"),
    ("I took {pet} to the vet clinic {when} because of a sore paw", "Why did {pet} go to the vet?"),
    (
        "{name} started learning the {instrument} {when} and practises every evening",
        "What instrument is {name} learning?",
    ),
    (
        "I went to a {event} in {city} with {name} {when}",
        "Who did I go to the {event} in {city} with?",
    ),
    (
        "{name} and I had dinner at {restaurant} {when}; the {food} was {adj}",
        "Where did I have dinner with {name}?",
    ),
    (
        "My favourite drink these days is {drink} with a slice of lemon",
        "What is my favourite drink?",
    ),
    (
        "I have been doing {hobby} every {weekday} at the {place} near our flat",
        "What hobby do I do on {weekday}s?",
    ),
    (
        "{rel} {name} got a new job as a {other_job} at {company} {when}",
        "What is {name}'s new job?",
    ),
    (
        "We are planning a trip to {city} in {month} to visit {name}",
        "Where are we travelling in {month}?",
    ),
    (
        "{name} recommended a novel about a lighthouse keeper and I finished it {when}",
        "Which book did {name} recommend?",
    ),
    (
        "I work as a {job} at {employer} and my team just grew to {number} people",
        "How big is my team at {employer}?",
    ),
    (
        "The {event} at {employer} is on {weekday} and I am giving a short speech",
        "When is the {event} at work?",
    ),
    (
        "{name} can't stand {food} but will happily eat {drink} cake every day",
        "What food does {name} dislike?",
    ),
    (
        "I bought a second-hand {obj} at the flea market for {number} euros",
        "How much did the {obj} cost?",
    ),
    (
        "{name} ran the city marathon in {city} {when} in under four hours",
        "Where did {name} run a marathon?",
    ),
    ("I saw {band} live in {city} {when} with {name}", "Where did I see {band} live?"),
    ("{rel} {name} is expecting a baby in {month}", "When is {name}'s baby due?"),
    (
        "I've been feeling {feeling} about the deadline at {employer} since {weekday}",
        "How do I feel about the deadline?",
    ),
    ("{name} lent me a {obj} for the camping trip {when}", "What did {name} lend me?"),
    (
        "I'm trying to cut down on {drink} and drink more water",
        "What am I trying to drink less of?",
    ),
    (
        "{name} grew up in {city} and still supports the local football club",
        "Where did {name} grow up?",
    ),
    ("We repainted the living room a pale green colour {when}", "What colour is the living room?"),
    (
        "{name} is vegetarian, so for the {event} I am cooking {food} instead",
        "What am I cooking for the {event}?",
    ),
    ("My {obj} broke {when} and I ordered a new one from {company}", "What broke recently?"),
    (
        "{pet} learned to open the kitchen door {when}, which is a problem",
        "What did {pet} learn to do?",
    ),
    (
        "I signed up for a {hobby} course at the {place} that starts in {month}",
        "When does my {hobby} course start?",
    ),
]
_CHATTER: list[str] = [
    "I spent the afternoon at the {place} with {name} and it was {adj}",
    "Not much news today, just {hobby} and an early night",
    "{name} called me {when} and we talked about {city} for an hour",
    "Work at {employer} has been {adj} this week, lots of meetings",
    "I made {food} for dinner and it turned out {adj}",
    "{pet} is curled up next to me while I write this",
    "Feeling a bit {feeling} today, the weather in {home} is {adj}",
    "Can you remind me what I said about {name} last time?",
    "I keep thinking about the {event} we went to {when}",
    "{name} sent me photos from {city}; it looks {adj} there",
]


def _person_of(persona: Persona, rng: random.Random) -> tuple[str, str]:
    kinds = persona.weights
    total = sum(w for _, _, w in kinds)
    pick = rng.random() * total
    for kind, name, weight in kinds:
        pick -= weight
        if pick <= 0:
            return kind, name
    return kinds[-1][0], kinds[-1][1]


def _clamp(text: str, rng: random.Random, low: int = 8, high: int = 30) -> str:
    words = text.split()
    while len(words) < low:
        words += rng.choice(TAILS).split()
    if len(words) > high:
        words = words[:high]
    out = " ".join(words)
    return out[0].upper() + out[1:] + ("" if out[-1] in ".?!" else ".")


class UserStream:
    """The endless, deterministic message stream of one user.

    Args:
        entity_id: The user; also the prefix of message ids.
        seed: Seed shared by a benchmark run (mixed with ``entity_id``).
        start: Timestamp of the first session; sessions follow minutes to hours apart.
    """

    def __init__(
        self,
        entity_id: str,
        *,
        seed: int = 7,
        start: datetime = datetime(2021, 1, 4, 9, 0, tzinfo=timezone.utc),
    ) -> None:
        self.entity_id = entity_id
        self._rng = random.Random(f"{seed}:{entity_id}")
        self.persona = Persona.make(self._rng)
        self._messages: list[Message] = []
        self._clock = start
        self._session = 0

    def take(self, count: int) -> list[Message]:
        """The first ``count`` messages of the stream."""
        while len(self._messages) < count:
            self._next_session()
        return self._messages[:count]

    def _next_session(self) -> None:
        rng = self._rng
        persona = self.persona
        self._session += 1
        # Sessions minutes to hours apart: 100k messages span about five years, all in the
        # past (recall leaves out memories whose time has not come yet).
        self._clock += timedelta(minutes=rng.choice([5, 15, 45, 90, 240, 600]))
        kind, person = _person_of(persona, rng)
        pet = persona.pets[0] if rng.random() < 0.7 else persona.pets[1]
        if kind == "pet":
            pet = next(p for p in persona.pets if p[0] == person)
            person = persona.partner
        city = rng.choice(CITIES) if rng.random() < 0.6 else persona.home
        ctx = _Ctx(persona=persona, person=person, pet=pet, city=city)
        tagged = [person] if kind != "pet" else [pet[0]]
        if rng.random() < 0.4:
            tagged.append(city)
        turns = rng.randint(3, 8)
        for turn in range(turns):
            at = self._clock + timedelta(seconds=40 * turn)
            number = len(self._messages)
            if turn % 2 == 0:
                text, question = self._user_turn(rng, ctx)
                role = "user"
            else:
                text, question = self._assistant_turn(rng, ctx), None
                role = "assistant"
            self._messages.append(
                Message(
                    id=f"{self.entity_id}:{number}",
                    role=role,
                    text=text,
                    timestamp=at,
                    session=self._session,
                    entities=tuple(tagged),
                    question=question,
                )
            )

    @staticmethod
    def _user_turn(rng: random.Random, ctx: _Ctx) -> tuple[str, str | None]:
        if rng.random() < 0.65:
            statement, question = rng.choice(_FACTS)
            # Fill statement and question from one draw so that they agree.
            state = rng.getstate()
            text = ctx.fill(rng, statement)
            rng.setstate(state)
            asked = ctx.fill(rng, question) if question else None
            rng.random()  # move on from the shared draw
        else:
            text, asked = ctx.fill(rng, rng.choice(_CHATTER)), None
        if rng.random() < 0.45:
            text = f"{text}, {rng.choice(TAILS)}"
        words, weights = topic_words()
        if words and rng.random() < 0.5:
            t1, t2, t3 = rng.choices(words, cum_weights=weights, k=3)
            tail = rng.choice(TOPIC_TAILS).format(t1=t1, t2=t2, t3=t3, name=ctx.person)
            text = f"{text}, {tail}"
        return _clamp(text, rng), asked

    @staticmethod
    def _assistant_turn(rng: random.Random, ctx: _Ctx) -> str:
        opener = ctx.fill(rng, rng.choice(ASSISTANT_OPENERS))
        follow = ctx.fill(rng, rng.choice(ASSISTANT_FOLLOWUPS))
        words, weights = topic_words()
        if words and rng.random() < 0.5:
            [topic] = rng.choices(words, cum_weights=weights, k=1)
            extra = rng.choice(ASSISTANT_TOPICS).format(name=ctx.person, topic=topic)
            follow = f"{follow} {extra}"
        return _clamp(f"{opener} {follow}", rng)


def corpus_vocabulary(texts: Sequence[str]) -> dict[str, int]:
    """Distinct lowercase word tokens and the size of the largest document frequency."""
    from memtrellis.store.keyword import tokenize

    df: dict[str, int] = {}
    for text in texts:
        for term in set(tokenize(text)):
            df[term] = df.get(term, 0) + 1
    return {"distinct_terms": len(df), "max_document_frequency": max(df.values(), default=0)}
