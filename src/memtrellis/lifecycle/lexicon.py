"""The words and patterns the claim reader (`memtrellis.lifecycle.claims`) reads, English
and Chinese: attribute classes, change / final / current / additive cues, negations and
antonyms, value words, stop words, and the lead-ins left out of a statement.

They are data, kept apart from the reading so that one can be read without the other;
`memtrellis.lifecycle.claims`, `memtrellis.lifecycle.slots`, `memtrellis.lifecycle.slots_zh`
and `memtrellis.lifecycle.overlap` import them from here.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

# Words that name one attribute in several ways ("lives in" / "moved to"); a shared class
# lets two wordings of one attribute meet.
_CLASSES = {
    "residence": "live lives living lived moved relocate relocated based home reside resides "
    "address flat apartment house",
    "work": "job jobs employed unemployed employer hired hire "
    "position role occupation career shift joined intern engineer manager nurse teacher "
    "doctor developer designer analyst barista chef cook driver lawyer accountant consultant",
    "relationship": "married engaged dating divorced partner wife husband boyfriend girlfriend",
    "preference": "like likes liked love loves loved prefer prefers preferred favourite "
    "favorite hate hates dislike dislikes enjoy enjoys fond",
    "schedule": "due deadline scheduled schedule date time rescheduled postponed delayed "
    "set planned",
    "contact": "phone email number mobile contact line reach reachable dial",
    "decision": "decided decide decision chose choose chosen picked plan plans planned",
    "status": "open opened closed pending approved rejected merged shipped delivered resolved "
    "completed finished paid unpaid active inactive frozen unfrozen enabled disabled engaged "
    "married divorced separated widowed",
    "age": "age old born birthday",
}
_ZH_CLASSES = {
    "residence": "住 搬 家在 迁 老家",
    "work": "工作 上班 就职 任职 跳槽 辞职 离职 入职 转行 老师 工程师 经理 会计 销售",
    "status": "冻结 解冻 开启 关闭 付款 发货 通过 批准",
    "preference": "喜欢 爱 讨厌 最爱",
    "schedule": "截止 会议 开会 日期 时间 定在 安排",
    "contact": "手机 电话 号码 邮箱 微信",
    "age": "岁 生日",
}
#: Attribute classes a subject has one value of at a time: a new value replaces the old.
SINGLE_VALUED = frozenset(
    {"residence", "work", "relationship", "schedule", "contact", "age", "status"}
)
#: Classes whose words are the values themselves ("open" / "merged", "engaged" / "married").
VALUE_CLASSES = frozenset({"status"})
_CLASS_OF: dict[str, set[str]] = {}
for _name, _words in _CLASSES.items():
    for _word in _words.split():
        _CLASS_OF.setdefault(_word, set()).add(_name)

# Words that own what a verb acts on ("cut the budget", "raised its prices").
_OWN = r"(?:to|by|the|a|an|my|his|her|their|our|its|your)"
_FINAL_EN = re.compile(
    r"\b(postponed?|delayed|pushed (?:\w+ ){0,4}?(?:back|out|to)|slipped|rescheduled|"
    r"(?:been|was|were|got) extended|extended (?:to|until|till|by)|"
    r"gave (?:\w+ ){0,2}until|(?:is|are|was|were|went|got|came) (?:down|up) to|"
    r"cancell?ed|called off|scrapped|abandoned|gave up|give up|quit|stopped(?! by)|"
    r"no longer|no more|not any ?more|any ?more|backed out|pulled out|withdrew|reversed|"
    r"overturned|sold|closed down|shut down|discontinued|increased|decreased|reduced|lowered|"
    r"doubled|tripled|halved|went (?:up|down)|upgraded|downgraded|promoted|demoted|laid off|"
    r"resigned|divorced|broke up|renamed|replaced|swapped|traded in|took over|"
    rf"(?:dropped|raised|cut|slashed|fell|rose) {_OWN}|(?:been|was|were|got) (?:cut|dropped|"
    r"raised|slashed)|fired(?! up)|handed (?:over|off|(?:\w+ ){1,4}?to)|(?:has|have|had) ended|"
    r"left (?:my|his|her|their|our|the) (?:job|company|firm|team|position|role)|correction|"
    r"changed (?:my|his|her|their|our) minds?|decided (?:not to|against)|got a raise)\b",
    re.IGNORECASE,
)
_CHANGE_EN = re.compile(
    r"\b((?:moved|moving) (?:\w+ ){0,3}?(?:to|into|back|out|in|house|away|abroad)|relocated|"
    r"changed|switched|"
    r"instead|took a job|got a job|got hired|"
    r"hired by|transferred|updated?|started (?:a new job|working (?:at|for|as)|as an?)|"
    # "new" of a thing one has one of ("my new number"), not "new things", "a new group"
    r"new (?=(?:\w+ )?(?:job|number|phone|mobile|email|address|home|flat|apartment|house|"
    r"manager|boss|role|position|deadline|date|time|price|name|car|school|office|partner|"
    r"doctor|lead|landline|account)\b))",
    re.IGNORECASE,
)
_EMPLOYED = re.compile(r"\bwork(?:s|ed|ing)? (?:at|for|as)\b")
# Change verbs that need their object: a name ("joined PwC"), an occupation, an age.
_CHANGE_OBJECT_EN = re.compile(
    r"\b(?:joined|became|now works for)\s+(?:an? |the )?zzname"
    r"|\bbecame an? (?:[\w-]+ )?(?:" + _CLASSES["work"].replace(" ", "|") + r")\b|\bturned \d+"
)
# What before a cue makes it no change yet: an intention, a wish, a negation ("not to give
# up", "plans to cut", "thinking about quitting", "will cut").
_NOT_YET = re.compile(
    r"\b(?:to|not|never|n't|don't|won't|about|considering|might|may|could|would|should|will|"
    r"if)\s+$"
)
_CURRENT_EN = re.compile(
    r"\b(now|these days|nowadays|currently|at present|from now on|going forward|as of|"
    r"starting (?:today|now|next \w+))\b",
    re.IGNORECASE,
)
_ADDITIVE_EN = re.compile(
    r"\b(also|too|as well|another|additionally|besides|either|plus|other)\b",
    re.IGNORECASE,
)
_NEGATION_EN = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|without|cannot)\b|n't\b", re.IGNORECASE
)
_FINAL_ZH = re.compile(
    r"延期|推迟|延后|延迟|顺延|推后|延长|取消|放弃|不再|戒掉|戒了|戒|辞职|离职|辞去|停止|"
    r"撤销|叫停|涨|降价|降到|降低|降为|下降|上涨|上调|下调|提高|提升|增加|减少|削减|减为|"
    r"减到|缩减|翻倍|减半|扩建|升职|升为|晋升|卖掉|改期|更正|决定不|不打算|转行|解冻"
)
_CHANGE_ZH = re.compile(
    r"改为|改成|改到|改在|改用|调整为|调整到|调整|更改为|更改|更换|变更为|变更|变为|变成|"
    r"换成|换了|换到|搬到|搬去|搬来|搬家|搬|迁到|迁至|迁往|迁|跳槽|入职|加入|转到|转为|改"
    r"|(?<=[的了个位部份换])新|^新"
)
_CURRENT_ZH = re.compile(r"现在|如今|目前|现已|从今以后|今后")
_ADDITIVE_ZH = re.compile(r"也|还有|另外|另一|又|同时|还(?![没未在是])")
# Words holding 不 / 没 / 无 that are not negations ("good", "but", "different", ...).
_NOT_NEGATION_ZH = re.compile(r"不错|不过|不同|不少|不久|不仅|不但|不管|无论|非常|未来|别人|别的")
_NEGATION_ZH = re.compile(r"[不没沒未无無非别]")
_EVENT_ZH = re.compile(r"过|去年|昨天|昨晚|上周|上个月|前天")
# Pairs whose second word is the negative of the first: "closed" is "not open".
_ANTONYMS_EN = {
    "closed": "open",
    "shut": "open",
    "disabled": "enabled",
    "off": "on",
    "unpaid": "paid",
    "unavailable": "available",
    "inactive": "active",
    "single": "married",
    "dead": "alive",
    "absent": "present",
    "unlocked": "locked",
    "rejected": "accepted",
    "denied": "approved",
    "unemployed": "employed",
}
_ANTONYMS_ZH = {"关闭": "开启", "关了": "开启", "关着": "开启", "停业": "营业", "未付款": "付款"}
# Other words of the positive side, read as it ("开着" is "开启").
_POSITIVE_ZH = {"开着": "开启", "打开": "开启", "开了": "开启"}
_ANTONYM_ZH = re.compile(
    "|".join(sorted({*_ANTONYMS_ZH, *_ANTONYMS_ZH.values(), *_POSITIVE_ZH}, key=len)[::-1])
)
# A negation closed by 了 says that something stopped ("不去了": no longer going).
_STOPPED_ZH = re.compile(r"[不没][^，。！？,.!?]*了[。！？!?.]*$")

_MONTHS = """january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec""".split()  # noqa: SIM905
_DAYS = """monday tuesday wednesday thursday friday saturday sunday tomorrow
    tonight""".split()  # noqa: SIM905
_NUMBER_WORDS = """zero one two three four five six seven eight nine ten eleven twelve thirteen
    fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy
    eighty ninety hundred thousand million billion dozen half twice once first second third
    fourth fifth 1st 2nd 3rd am pm""".split()  # noqa: SIM905
_VALUE_WORDS = frozenset([*_MONTHS, *_DAYS, *_NUMBER_WORDS])
_NUMBER = re.compile(
    r"[$€£¥]?\d+(?:[.,:/-]\d+)*(?:st|nd|rd|th|k|m|%|am|pm)?|\S+@\S+\.\w+", re.IGNORECASE
)
_ZH_NUMBER = re.compile(
    r"[$€£¥]?\d+(?:[.,:/-]\d+)*%?|[零〇一二两三四五六七八九十百千万亿半]+"
    r"|大后天|后天|明天|今天|昨天|前天|今晚|明晚|昨晚|本周|下周|上周|下个月|上个月|明年|去年|今年"
)
_ASCII_RUN = re.compile(r"[A-Za-z][A-Za-z0-9_.@+-]*")
_WORD = re.compile(r"[a-z0-9$€£¥][\w'’.,@$%/:-]*[\w%]|[a-z0-9]", re.IGNORECASE)

_STOP_EN = frozenset(
    """a an the is are was were be been being am 'm 's 're 've 'd 'll i me my mine we us our
    ours you your yours he him his she her hers it its they them their theirs this that these
    those there here to of in on at for by with from into onto about over under up out off
    per and or but so if then than just very really quite around approximately roughly about
    until till will would shall should can could may might must do does did done has have had
    having get gets got getting some any all every each still only usually often always mostly
    recently finally already again also too now who which what where when how one ones
    going gonna lot lots a.m p.m im ive""".split()  # noqa: SIM905 - reads as text
)
# Words that name which attribute a value is of rather than whose: "the launch date" is
# "the launch", "a new email address" an email, "the subscription price" the subscription.
_ATTRIBUTE_NOUNS = frozenset(
    """date day time hour number phone mobile email e-mail address contact reach call mail
    amount total figure count value price cost fee rate deadline target level size limit
    status""".split()  # noqa: SIM905 - reads as text
)
# Tokens after which the subject phrase stops: auxiliaries, modals, adverbs of the verb.
_VERBISH = frozenset(
    """is are was were am be been 'm 're 's has have had will would can could should shall
    may might must do does did don't doesn't didn't won't can't isn't aren't wasn't never not
    no just now also still recently finally already really only usually often always mostly
    currently then got gets""".split()  # noqa: SIM905 - reads as text
)
_DETERMINERS = frozenset(
    "the a an my our his her their your its this that these those".split()  # noqa: SIM905
)
_SPEAKER = frozenset("i i'm i've i'd i'll me we we're we've us".split())  # noqa: SIM905
_PRONOUNS = frozenset(
    "he she it they you he's she's it's they're you're someone".split()  # noqa: SIM905
)
_PAST_IRREGULAR = frozenset(
    """went met saw bought ate took made did gave won lost ran swam flew came spent began
    wrote drove sang threw told said heard found brought caught taught felt kept slept sent
    built drank""".split()  # noqa: SIM905 - reads as text
)
_STATE_PARTICIPLES = frozenset(
    """married engaged based employed unemployed retired interested located closed disabled
    enabled paid unpaid scheduled expected installed called named booked planned set allergic
    delayed postponed""".split()  # noqa: SIM905 - reads as text
)
_ZH_FUNCTION = re.compile(
    r"[的了是为在于到至将已经很都就把被着呢吗吧啊呀和与及并而且个位这那该其还"
    r"，。！？、：；“”‘’《》（）()!?,.;:\s]"
)
# What ends a Chinese topic: the copula or a verb of place, naming or having.
_ZH_PREDICATE = re.compile(r"是|为|叫|在|住|有|定于|将于")
_ZH_SPEAKER = re.compile(r"^(?:我们|我家|我的|我)")
_ZH_PRONOUN = re.compile(r"^(?:他们|她们|他的|她的|他|她|它)")
_REASON_LEAD = re.compile(
    r"^(?:after|because(?: of)?|since|due to|following|owing to|thanks to)\b[^,]*,\s*"
    r"|^(?:after|following|because of|due to)\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+)?\w+"
    r"(?:\s+\w+)?\s+(?=(?:the|my|our|his|her|their|we|i|they|it)\b)",
    re.IGNORECASE,
)
_REASON_TAIL = re.compile(
    r"[,;]?\s+\b(?:after|because|since|due to|following|owing to|thanks to|so that)\b.*$",
    re.IGNORECASE,
)
_DISCOURSE = re.compile(
    r"^(?:correction|update|note|fyi|btw|actually|heads up|ok|okay|so|well|oh)\b[:,!.]?\s*",
    re.IGNORECASE,
)
# "Label: what is said" or "Thing: value": a short phrase before a colon.
_LABELLED = re.compile(r"^([^:.!?;]{1,48}?)\s*:\s+(?=\S)(.*)$", re.DOTALL)
_CLAUSE_WORD = re.compile(
    r"\b(?:is|are|was|were|am|has|have|had|will|can|got|gets|i|we|they|he|she|it|you|"
    r"\w+ed)\b|\w'(?:s|re|m|ve)\b",
    re.IGNORECASE,
)
